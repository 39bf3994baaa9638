# patchbay's container image: `patchbay serve` as a non-root user, listening on 0.0.0.0:8080.
#
#   docker build -t patchbay-server .
#   docker run --rm -p 8080:8080 -e PATCHBAY_SECRET_KEY=<secret> -v patchbay-data:/data patchbay-server
#
# The same image runs the other commands: `worker`, `db upgrade`, `workspaces create ...`
# (the entry point is `patchbay`; the default command is `serve`). docs/deploy.md has the rest.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# -- build: the package and its dependencies into a virtual environment --------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/patchbay
COPY . /src
RUN /opt/patchbay/bin/pip install --upgrade pip \
    && /opt/patchbay/bin/pip install "/src[redis]"

# -- runtime: the environment alone, run by an unprivileged user ----------------------------------
FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 patchbay \
    && useradd --system --uid 10001 --gid patchbay --home-dir /home/patchbay --create-home --shell /usr/sbin/nologin patchbay \
    && mkdir /data && chown patchbay:patchbay /data
COPY --from=build /opt/patchbay /opt/patchbay
ENV PATH=/opt/patchbay/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PATCHBAY_HOST=0.0.0.0 \
    PATCHBAY_PORT=8080 \
    PATCHBAY_DATA_DIR=/data
USER patchbay
WORKDIR /home/patchbay
# Load every plugin once: it fails the build on a broken install and leaves the provider
# catalog's index in the user's cache, so each process starts without parsing the catalog.
RUN patchbay packs list > /dev/null
VOLUME ["/data"]
EXPOSE 8080
# /health answers 200 when the database answers (503 otherwise); the image has no curl.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PATCHBAY_PORT', '8080'), timeout=4)"]
ENTRYPOINT ["patchbay"]
CMD ["serve"]
