"""Convert between currencies with the day's published rates (base USD)."""


def convert(amount: float, rate_from: float, rate_to: float) -> float:
    return round(amount / rate_from * rate_to, 2)
