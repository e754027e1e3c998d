"""Decode untrusted bytes in a helper process with an address-space and a time limit.

PDFium inflated a 1 MB Flate stream into 2.1 GB, and a 100 KB PDF drove it to 6.4 GB: a decoder
that explodes inside the worker takes the worker (and its neighbours) down with it, and no size
check on the input bytes predicts it. In a helper process under ``RLIMIT_AS`` the explosion ends
at the limit and kills only the helper (PDFium aborts when an allocation fails; Python raises
``MemoryError``); the worker reads the outcome, records a bounded error on the source and starts
another helper for the next one.

- ``decoder_process``: the worker's side (start, requests, timeouts, replacement); ``decoder()``
  is this process's helper.
- ``helper``: what runs in the helper (limits per request, decode, reply).
- ``frames``: the length-prefixed frames requests and replies travel in.
- ``outcomes``: the errors a decode that did not return ends with.
- ``memory``: address space and resident set from ``/proc``.

Linux only (``RLIMIT_AS``, ``/proc``, ``PR_SET_PDEATHSIG``), like every deployment of this service.
"""
from pipeline.sandbox.decoder_process import DecoderProcess, decoder

__all__ = ["DecoderProcess", "decoder"]
