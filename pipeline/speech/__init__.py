"""Speech in audio and video sources, transcribed by faster-whisper into timed segments.

``audio`` decodes a file's sound to 16 kHz mono and finds where people speak (in the decoder
helper, under its caps), ``transcribing`` reads those stretches with a packaged whisper model
(``models``) in a helper process of its own, one window at a time, so a long recording reports
its progress and stops between windows when its job is cancelled.
"""
