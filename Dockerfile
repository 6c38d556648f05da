# quotaledger ingest worker image (docker-compose.yml service "ingest").
#   docker build -t quotaledger .
# Stage 1 builds the wheel: setup.py compiles the engine's hot modules with mypyc, which needs a C compiler.
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# Stage 2: the runtime, without the compiler.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 \
    QUOTALEDGER_DB=postgresql+psycopg://quotaledger@postgres:5432/quotaledger \
    QUOTALEDGER_BOOTSTRAP=kafka:19092 \
    QUOTALEDGER_TOPIC_PREFIX=quotaledger \
    QUOTALEDGER_GROUP=quotaledger-ingest \
    QUOTALEDGER_METRICS_PORT=9464
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels quotaledger && rm -rf /wheels \
    && useradd --system --no-create-home quotaledger
USER quotaledger
# Bring the SQL schema to the current revision, then run the worker as PID 1 (exec), so SIGTERM from
# `docker compose stop` reaches it: it finishes the current batch and commits. Its metrics and health
# endpoints listen on every interface of the container (reachable only where the port is exposed).
CMD ["sh", "-c", "quotaledger db upgrade --db \"$QUOTALEDGER_DB\" && exec quotaledger ingest --bootstrap \"$QUOTALEDGER_BOOTSTRAP\" --db \"$QUOTALEDGER_DB\" --topic-prefix \"$QUOTALEDGER_TOPIC_PREFIX\" --group \"$QUOTALEDGER_GROUP\" --metrics-port \"$QUOTALEDGER_METRICS_PORT\" --metrics-host 0.0.0.0"]
