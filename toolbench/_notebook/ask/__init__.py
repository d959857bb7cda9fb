"""A person's part: the ask widget (sampling, elicitation), schema forms, the cell-side pump, the
sign-in card."""
