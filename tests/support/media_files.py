"""Media files the corpus lacks, written by PyAV in a process of its own: FFmpeg's encoder
threads and locks in the test process would be inherited, held, by every helper forked after
them (the decoder and speech helpers then hang)."""
from __future__ import annotations

import io
import multiprocessing
from pathlib import Path


def silent_film() -> bytes:
    """One second of MPEG-4 video with no sound track."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_silent_film)


def _silent_film() -> bytes:
    import av
    import numpy as np

    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
        for index in range(10):
            frame = av.VideoFrame.from_ndarray(np.full((64, 64, 3), index * 20, dtype=np.uint8), format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return buffer.getvalue()


def transcoded(path: Path, container: str, codec: str) -> bytes:
    """The sound of ``path`` re-encoded with ``codec`` (48 kHz) into a ``container`` file."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_transcoded, (str(path), container, codec))


def _transcoded(path: str, container: str, codec: str) -> bytes:
    import av

    buffer = io.BytesIO()
    with av.open(path) as source, av.open(buffer, mode="w", format=container) as target:
        stream = target.add_stream(codec, rate=48_000)
        resampler = av.AudioResampler(format=stream.codec_context.format, layout=stream.codec_context.layout, rate=48_000)
        for frame in [*source.decode(audio=0), None]:
            for resampled in resampler.resample(frame):
                target.mux(stream.encode(resampled))
        target.mux(stream.encode(None))
    return buffer.getvalue()
