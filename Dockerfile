# kvserve on a GPU node. Untested until built on a Docker host (the build
# machines have no Docker engine); the packages come from the same list as
# deploy/install-deps.sh.
#
#   docker build -t kvserve .
#   docker run --gpus all -p 50051:50051 -p 9464:9464 kvserve [--model /models/x]

# ---- build: CUDA 13 devel image, the project's package list, Release build
FROM nvidia/cuda:13.0.0-devel-ubuntu24.04 AS build
ENV DEBIAN_FRONTEND=noninteractive
COPY deploy/install-deps.sh /src/deploy/install-deps.sh
RUN /src/deploy/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVSERVE_CUDA=ON \
 && cmake --build /build \
 && cmake --install /build --prefix /opt/kvserve \
 && /src/deploy/collect-libs.sh /opt/kvserve

# ---- run: CUDA runtime image, the programs and the libraries they link
FROM nvidia/cuda:13.0.0-runtime-ubuntu24.04
COPY --from=build /opt/kvserve /opt/kvserve
ENV PATH=/opt/kvserve/bin:$PATH LD_LIBRARY_PATH=/opt/kvserve/lib
RUN useradd --system --uid 10001 --no-create-home kvserve
USER kvserve
EXPOSE 50051 8000 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["kvserve-cli", "--target", "127.0.0.1:50051", "--timeout-s", "2", "health"]
ENTRYPOINT ["kvserve", "--host", "0.0.0.0", "--port", "50051", "--metrics_port", "9464", "--metrics_host", "0.0.0.0"]
