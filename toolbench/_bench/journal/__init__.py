"""Records and the SQLite journal: intents before a send, outcomes after, the writer thread,
reading files back.

Holds, bottom-up (each module imports only those before it): ``sqlite_pages`` and
``intent_log`` and ``file_checks`` (what a file must be before it is read; no journal
imports), ``record`` (a call's Record, its columns, the records
frame), ``codec`` (the schema, and rows to and from Records), ``file`` (recognise, open,
inspect), ``writer`` (the writer thread), ``journal`` (Journal, JournalWarning) and ``store``
(RecordStore: the records in memory, and their journal). May import ``toolbench._core`` only,
besides itself.
"""
