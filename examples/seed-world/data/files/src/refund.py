"""Approve a refund for one order, following docs/refund-policy.md."""

RETURN_WINDOW_DAYS = {"physical": 30, "software": 14}


def refund_kind(category: str) -> str:
    if category == "apparel":
        return "store_credit"
    return "original_payment"


def within_window(category: str, days_since_delivery: int) -> bool:
    kind = "software" if category == "software" else "physical"
    return days_since_delivery <= RETURN_WINDOW_DAYS[kind]
