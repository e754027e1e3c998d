"""Optical character recognition for pages without a text layer: scans, photos, image files.

- ``lines``: what an engine reads (lines of text, each with its box on the page).
- ``engines``: the interface every engine implements and the registry that names them.
- ``tesseract`` and ``easyocr_engine``: the two engines (docs/decisions/0014 says which is the default and why).
- ``orientation``: turning a page upright and mapping boxes back onto the page as shown.
- ``page_images``: page images from image files and PDF pages, within pixel caps (runs in the decoder helper).
- ``reading``: the OCR pass the extract step runs over the pages an extractor could not read.
"""
