"""The page is served by the same process, whole and offline: no CDN, no build step."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

SVG_NAMESPACE = "http://www.w3.org/2000/svg"


def test_the_page_and_its_assets_are_served_without_a_cdn(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    assert "http://" not in page.text and "https://" not in page.text
    for asset in ("app.js", "style.css"):
        body = client.get(f"/static/{asset}").text.replace(SVG_NAMESPACE, "")  # a name, never fetched
        assert "https://" not in body and "http://" not in body, asset


def test_query_string_share_link_round_trip_is_plain_fields(client: TestClient) -> None:
    """A share link is the page's URL with the API's own fields: the same query answers on /v1/estimate."""
    query = urlencode({"model": "llama-3.1-8b", "gpu": "h100", "batch": "4"})
    assert client.get(f"/v1/estimate?{query}").status_code == 200
    assert client.get(f"/?{query}").status_code == 200
