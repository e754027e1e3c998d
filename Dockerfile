FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY app app
COPY tasks tasks
COPY pipeline pipeline
COPY storage storage
COPY serving serving
COPY alembic alembic
COPY web web
RUN pip install --no-cache-dir -e . flower
ENV OMP_NUM_THREADS=1
CMD ["gnosi", "serve"]
