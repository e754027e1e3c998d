"""The vault's tables and records, seen as a catalogue of notebook resources.

Read-only: the vault belongs to the user. Modules: ``tables`` (schemas, chosen by identity),
``records`` (front matter of each record file), ``sources`` (attachment/URL values, the only
evidence), ``paths`` (containment of attachment paths), ``selector`` (filter, facet, sort, page),
``validation`` (ids of a create/add request) and ``cache`` (the ``Catalogue`` that avoids
re-parsing unchanged files).
"""
from .cache import Catalogue
from .paths import AttachmentResolver, is_contained_rel_path, resolve_attachment
from .records import Record, RecordLoad, SkippedFile, load_records, read_records
from .selector import MAX_PER_PAGE, Selection, fold, select_resources
from .sources import EXCLUSIONS, exclusion, record_sources
from .tables import Table, find_table, list_tables
from .validation import MAX_RESOURCES_PER_REQUEST, validate_resource_ids

__all__ = [
    "AttachmentResolver",
    "EXCLUSIONS",
    "MAX_PER_PAGE",
    "MAX_RESOURCES_PER_REQUEST",
    "Catalogue",
    "Record",
    "RecordLoad",
    "Selection",
    "SkippedFile",
    "Table",
    "exclusion",
    "find_table",
    "fold",
    "is_contained_rel_path",
    "list_tables",
    "load_records",
    "read_records",
    "record_sources",
    "resolve_attachment",
    "select_resources",
    "validate_resource_ids",
]
