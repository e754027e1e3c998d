FROM python:3.11-slim
# tesseract, the default OCR engine (docs/decisions/0014)
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY app app
COPY tasks tasks
COPY pipeline pipeline
COPY storage storage
COPY serving serving
COPY alembic alembic
COPY web web
RUN pip install --no-cache-dir -e '.[embeddings]' flower \
    && python -m compileall -q app pipeline serving storage tasks
ENV OMP_NUM_THREADS=1
CMD ["gnosi", "serve"]
