# syntax=docker/dockerfile:1
#
# Mailroom image: one image for the API (default command), the Temporal worker and the
# migration job (both override the command; see docker-compose.yml).
# The TypeScript sources run as-is through tsx, so there is no compile step.

# ---- deps: install the locked dependency tree, then drop dev-only packages ----
FROM node:20-bookworm-slim AS deps
WORKDIR /app
# Only the manifests first, so editing source does not invalidate the npm layer.
COPY package.json package-lock.json ./
# The full install (dev dependencies included) is the stage where a build or type check
# could run; prune then removes typescript, jest and the @types packages. tsx, @swc/core
# (used by @temporalio/worker to bundle workflows) and @temporalio/* stay: they are
# runtime dependencies. The node 20 image ships npm 10, which ignores package.json's
# `allowScripts` field and runs install scripts (esbuild, @swc/core, protobufjs) as usual.
RUN --mount=type=cache,target=/root/.npm \
    npm ci --no-audit --no-fund \
 && npm prune --omit=dev --no-audit --no-fund

# ---- runtime ----
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    DATA_DIR=/data \
    PORT=8080
WORKDIR /app

# Dependencies and sources stay owned by root (read-only for the app user); only the
# data directory is writable. Creating /data here, owned by `node`, before VOLUME makes a
# fresh named volume inherit that ownership.
RUN mkdir -p /data && chown node:node /data

COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY api ./api
COPY db ./db
COPY worker ./worker
COPY workflows ./workflows
COPY activities ./activities
COPY services ./services
COPY temporal ./temporal
COPY launcher ./launcher
COPY lib ./lib
COPY mail ./mail
COPY scripts ./scripts

# The `node` user (uid 1000) comes with the official image.
USER node
VOLUME ["/data"]
# HTTP API; inbound SMTP (INBOUND_SMTP_PORT) and submission (SUBMISSION_SMTP_PORT), both above
# 1024 because the app runs as `node`, not root: docker-compose.yml publishes them as 25 and 587.
EXPOSE 8080 2500 2587

# The slim image has no curl; Node 20's global fetch does the probe. The worker and the
# migration job use this same image and turn the check off in docker-compose.yml.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/health', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# `node --import tsx` runs TypeScript in-process (no child process), so SIGTERM from
# `docker stop` reaches the app directly.
CMD ["node", "--import", "tsx", "api/main.ts"]
