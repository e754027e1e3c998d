"""Source bytes to located text: ``extract`` picks the best registered extractor for a source.

Adding a format (OCR for images, audio transcription) means one new module with an ``Extractor``
subclass and one ``register`` line below; nothing else changes.
"""
from pipeline.extractors.html import HtmlExtractor
from pipeline.extractors.image import ImageExtractor
from pipeline.extractors.media import MediaExtractor
from pipeline.extractors.pdf import PdfExtractor
from pipeline.extractors.registry import extract, pick, register
from pipeline.extractors.subtitles import SubtitlesExtractor
from pipeline.extractors.text import TextExtractor

register(PdfExtractor())
register(HtmlExtractor())
register(TextExtractor())
register(ImageExtractor())
register(MediaExtractor())
register(SubtitlesExtractor())

__all__ = ["extract", "pick", "register"]
