# syntax=docker/dockerfile:1
# `scripts/docker-replay.sh` replays these steps without a Docker engine (CI runs it): it reads FROM,
# WORKDIR, ENV, COPY and RUN from this file, so keep to those (it refuses any other build instruction).

# Build stage: compile TypeScript with the full toolchain.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The lock covers the workspace (the @tollgate/client package): npm ci needs its manifest too.
COPY packages/client/package.json ./packages/client/package.json
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY migrations ./migrations
COPY scripts ./scripts
# The compile, then the dashboard's browser files (Preact and htm copied out of node_modules).
COPY bin ./bin
RUN node bin/build.js

# Production dependencies only, from the same lock: no embedded PostgreSQL, no toolchain.
FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json ./packages/client/package.json
# The server needs no workspace package at run time: leave the client (and its link) out.
RUN npm ci --omit=dev --workspaces=false --no-audit --no-fund

# Runtime stage: production dependencies and compiled code only, as an unprivileged user.
FROM node:24-slim AS runtime
# NODE_COMPILE_CACHE: V8's compiled code is kept on disk, so a start reads it instead of compiling
# every module again (about half of a start's time is loading modules).
# NODE_OPTIONS: V8's young generation capped at 2 x 16 MB instead of the 2 x 64 MB it grows to on
# 64-bit Node 24, which was most of the resident memory past the live heap (docs/performance.md).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=4000 \
    NODE_COMPILE_CACHE=/app/.compile-cache \
    NODE_OPTIONS=--max-semi-space-size=16
WORKDIR /app
COPY --from=deps --chown=root:root /app/package.json ./
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
# Served at GET /openapi.yaml.
COPY --chown=root:root schema/openapi.yaml ./schema/openapi.yaml
# Fills the compile cache in the image, readable by every user: the command line, then the commands'
# code (which loads the whole server; `help` alone loads none of it).
RUN node dist/src/main.js help > /dev/null \
    && node --input-type=module -e "await import('./dist/src/cli-commands.js')" \
    && chmod -R a+rX /app/.compile-cache
USER node
EXPOSE 4000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 4000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Release step, before new instances start: `node dist/src/main.js migrate` (serve also applies any pending).
CMD ["node", "dist/src/main.js", "serve"]
