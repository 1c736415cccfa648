"""Reports to people and spreadsheets: JSON, CSV, XLSX, rich tables, charts. Renderers format; they never compute."""
