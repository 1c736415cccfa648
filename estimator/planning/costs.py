"""What a deployment costs: owned (servers bought, amortised, and their power) and rented, kept apart.

Owned cost per hour of ``servers`` × a system:
    servers × (server price ÷ (amortization_years × 8760 h) + server power W ÷ 1000 × $/kWh)
with the server price from the prices file, else the system spec; a system without a price is costed from its
cards' prices (cards × card price), and the basis says the host is not priced. Rented cost per hour comes only
from a prices file: per server-hour (``systems:``) or per GPU-hour (``gpus:``). $/million tokens = cost per hour ÷
(generated tokens/s × 3600) × 10⁶.

A part of a server (k of its N GPUs, a smaller size it is sold or rented in: `SystemSpec.partial_gpus`) counts as
k/N of a server: its price, its power and a server-hour's rent pro rata, as cloud shapes of 1, 2 or 4 GPUs of one
server are priced near k/N of the whole (GCP a3-highgpu-1g/2g/4g/8g, G4 1/2/4/8 GPUs).

The shipped defaults (specs/costs.yaml) carry one source per setting; a prices file that sets a value replaces its
source with the file's, so the assumptions state only the figures actually used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.errors import SpecInvalid
from estimator.report import Frozen

HOURS_PER_YEAR = 8760
SETTINGS = ("amortization_years", "electricity_usd_per_kwh")


class CardPrice(Frozen):
    """One card's (or one server's) prices in a user prices file; any field may be left out."""

    # ceilings: a billion dollars for one card or server (an NVL72 rack is about $3M), a million an hour to rent one
    usd: float | None = Field(default=None, gt=0, le=1e9)  # purchase price
    date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}$")
    usd_per_hour: float | None = Field(default=None, gt=0, le=1e6)  # rental price per card-hour (server-hour)
    source: str | None = None


class Prices(Frozen):
    """Cost inputs: ownership settings and per-card / per-server overrides (a user's --prices file)."""

    amortization_years: float = Field(gt=0, le=50)
    electricity_usd_per_kwh: float = Field(ge=0, le=10)
    gpus: dict[str, CardPrice] = Field(default_factory=dict)  # keyed by catalog name
    systems: dict[str, CardPrice] = Field(default_factory=dict)  # keyed by system name
    sources: tuple[str, ...] = ()  # one per setting: the default's, or the prices file's


def _resolved(section: Any, where: str, name: str, resolve: Callable[[str], Any] | None) -> dict[str, Any]:
    if not isinstance(section, Mapping):
        raise SpecInvalid(f"{where}: '{name}' must map names to prices")
    return {(resolve(str(k)).name if resolve else str(k)): v for k, v in section.items()}


def load_prices(defaults: Mapping[str, Any], user: Mapping[str, Any] | None, *, user_path: Path | None = None,
                resolve: Callable[[str], Any] | None = None,
                resolve_system: Callable[[str], Any] | None = None) -> Prices:
    """Merge the shipped defaults with a user prices mapping; card and system keys are resolved to catalog names
    (``resolve``, ``resolve_system``), so 'h100' and 'NVIDIA H100 SXM5 80GB' mean the same card."""
    where = str(user_path) if user_path else "prices"
    merged: dict[str, Any] = {k: defaults[k] for k in SETTINGS if k in defaults}
    default_sources = defaults.get("sources") or {}
    if not isinstance(default_sources, Mapping):
        raise SpecInvalid("specs/costs.yaml: 'sources' must map each setting to its source")
    sources = {k: f"{k}: {default_sources[k]}" for k in SETTINGS if k in default_sources}
    if user is not None:
        unknown = sorted(set(user) - {*SETTINGS, "gpus", "systems"})
        if unknown:
            raise SpecInvalid(f"{where}: unknown keys {', '.join(unknown)} (expected amortization_years, "
                              "electricity_usd_per_kwh, gpus, systems)")
        for key in SETTINGS:
            if key in user:
                merged[key] = user[key]
                sources[key] = f"{key}: {user[key]} from {where}"
        merged["gpus"] = _resolved(user.get("gpus") or {}, where, "gpus", resolve)
        merged["systems"] = _resolved(user.get("systems") or {}, where, "systems", resolve_system)
    merged["sources"] = tuple(sources[k] for k in SETTINGS if k in sources)
    try:
        return Prices.model_validate(merged)
    except ValidationError as error:
        from estimator.catalog.registry import validation_message

        raise SpecInvalid(f"{where}: {validation_message(error)}") from None


class Hourly(Frozen):
    """A cost per hour and what it is made of (the servers' price and power, or a rental price)."""

    usd_per_hour: float
    basis: str


class Cost(Frozen):
    """The cost of one option: its purchase prices, and per hour owned and rented apart; None where unpriced."""

    price_usd_per_card: float | None
    price_usd_per_server: float | None
    price_date: str | None
    price_source: str | None
    owned: Hourly | None
    rented: Hourly | None


def node_share(system: SystemSpec, bought: int) -> float:
    """Servers ``bought`` GPUs make: a whole number for whole servers, k/N for k GPUs of an N-GPU server."""
    if bought % system.gpus_per_node == 0:
        return bought // system.gpus_per_node
    return bought / system.gpus_per_node


def _servers_word(system: SystemSpec, nodes: float) -> str:
    """What the servers' price covers: "servers", or the part of one bought."""
    if nodes == int(nodes):
        return "servers"
    return f"{round(nodes * system.gpus_per_node)} of a server's {system.gpus_per_node} GPUs, pro rata"


def _capex(system: SystemSpec, gpu: GpuSpec, nodes: float, gpus: int,
           prices: Prices) -> tuple[float | None, str | None, str | None, str]:
    """(purchase USD of the option, date, source, what was priced)."""
    server = prices.systems.get(system.name, CardPrice())
    if server.usd is not None:
        return nodes * server.usd, server.date, server.source or "prices file", _servers_word(system, nodes)
    if system.price_usd is not None:
        return nodes * system.price_usd, system.price_date, "system spec, approximate", _servers_word(system, nodes)
    card = prices.gpus.get(gpu.name, CardPrice())
    if card.usd is not None:
        return gpus * card.usd, card.date, card.source or "prices file", "cards only, host not priced"
    if gpu.price_usd is not None:
        return gpus * gpu.price_usd, gpu.price_date, "GPU spec, approximate", "cards only, host not priced"
    return None, None, None, ""


def option_cost(system: SystemSpec, gpu: GpuSpec, servers: float, gpus: int, prices: Prices) -> Cost:
    """Owned and rented cost per hour of ``servers`` × ``system`` (k/N for a part of one: `node_share`) using
    ``gpus`` of their GPUs."""
    capex, date, source, what = _capex(system, gpu, servers, gpus, prices)
    power_w = servers * system.server_power_w
    whole = servers == int(servers)
    owned = None
    if capex is not None:
        owned = Hourly(
            usd_per_hour=capex / (prices.amortization_years * HOURS_PER_YEAR)
            + power_w / 1000 * prices.electricity_usd_per_kwh,
            basis=(f"owned: ${capex:,.0f} ({what}) over {prices.amortization_years:g} y + {power_w:,.0f} W of "
                   f"{'servers' if whole else 'the server, pro rata'} at ${prices.electricity_usd_per_kwh:g}/kWh"))
    server_rent = prices.systems.get(system.name, CardPrice()).usd_per_hour
    card = prices.gpus.get(gpu.name, CardPrice())
    rented = None
    if server_rent is not None:
        per = system.gpus_per_node
        share = f"{servers:g}" if whole else f"{round(servers * per)}/{per} (pro rata)"
        rented = Hourly(usd_per_hour=server_rent * servers, basis=f"rented at ${server_rent:g}/server-hour × {share}")
    elif card.usd_per_hour is not None:
        rented = Hourly(usd_per_hour=card.usd_per_hour * gpus,
                        basis=f"rented at ${card.usd_per_hour:g}/card-hour × {gpus} ({card.source or 'prices file'})")
    card_price = prices.gpus.get(gpu.name, CardPrice()).usd or gpu.price_usd
    server_price = prices.systems.get(system.name, CardPrice()).usd or system.price_usd
    return Cost(price_usd_per_card=card_price, price_usd_per_server=server_price, price_date=date,
                price_source=source, owned=owned, rented=rented)


def per_million_tokens(usd_per_hour: float | None, tokens_per_s: float | None) -> float | None:
    """$/Mtoken = $/h ÷ (tokens/s × 3600) × 10⁶; None without a cost or a rate."""
    if usd_per_hour is None or not tokens_per_s:
        return None
    return usd_per_hour / (tokens_per_s * 3600) * 1e6
