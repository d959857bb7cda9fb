"""A person's part: the asker and its wait hook (``ask``), what a person sees of a question
(``widgets``), schema forms (``form``), the cell-side pump (``pump``), the sign-in card
(``signin``).

May import the layers below the notebook (``_core``, ``_transports``, ``_loop``, ``_bench``);
not ``explorer/`` or ``views/``, which import it.
"""
