# syntax=docker/dockerfile:1
# The gateway image: see docs/container.md for building, running and the container rules.
#
#   docker build -t gateway .
#   docker run --read-only -v gateway-data:/var/lib/gateway \
#     -v ./gateway.yaml:/etc/gateway/gateway.yaml:ro -e GATEWAY_CONFIG_KEY -p 8080:8080 gateway

# ---- build: compile TypeScript and produce production node_modules -------------------------------
# Same Node major (ABI) and the same Debian 12 glibc as the runtime image, so the better-sqlite3
# addon compiled here loads there.
FROM node:24-bookworm-slim AS build

# Toolchain for better-sqlite3's node-gyp build; this stage is discarded, so none of it ships.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Compile better-sqlite3 from the source npm verified against package-lock.json instead of letting
# prebuild-install download an unverified binary, against the headers of the Node that runs it.
ENV npm_config_build_from_source=better-sqlite3 \
  npm_config_nodedir=/usr/local \
  npm_config_update_notifier=false \
  npm_config_fund=false \
  npm_config_audit=false

# Dependencies first: this layer is reused until package.json or the lockfile change.
# --ignore-scripts, then the install scripts of the two dependencies package.json's allowScripts
# approves (better-sqlite3, esbuild): `npm ci` would also run the project's own `prepare` (the build),
# whose sources are not copied yet; `npm run build` below builds them.
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts && npm rebuild better-sqlite3 esbuild

COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src

# Prune keeps the addon compiled above (a second `npm ci --omit=dev` would compile it again).
# The last command proves the addon loads before anything is shipped.
RUN npm run build \
  && npm prune --omit=dev \
  && node -e "new (require('better-sqlite3'))(':memory:').close()" \
  && mkdir -p -m 0700 /image/var/lib/gateway

# ---- runtime: distroless, no shell, non-root ---------------------------------------------------------
FROM gcr.io/distroless/nodejs24-debian12:nonroot

WORKDIR /app

# Application files stay owned by root: the process (uid 65532) can read but not change them.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist

# The SQLite volume. A new named volume copies this directory's owner and mode, so the gateway can
# write it. The parent is copied so `gateway` is itself a copied entry and certainly gets the owner.
COPY --from=build --chown=65532:65532 /image/var/lib/ /var/lib/
VOLUME ["/var/lib/gateway"]

# Numeric, so Kubernetes' runAsNonRoot can verify it (the tag's user name alone cannot be checked).
USER 65532:65532

# server.listen must be 0.0.0.0:8080 to match this port (docs/container.md).
EXPOSE 8080

# No HEALTHCHECK: there is no shell or curl, the listen port is configuration, and Kubernetes ignores
# image health checks. Probe GET /healthz (liveness) and GET /readyz (readiness) from the orchestrator;
# docs/container.md shows an exec-form check through the image's Node for plain Docker/Compose.

# The executable is the entrypoint: `serve --config …` or `validate --config …` are its arguments.
ENTRYPOINT ["/nodejs/bin/node", "/app/dist/main.js"]
CMD ["serve", "--config", "/etc/gateway/gateway.yaml"]
