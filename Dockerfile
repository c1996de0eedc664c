# syntax=docker/dockerfile:1
#
# Mailroom image: one image for the API (default command), the Temporal worker and the
# migration job (both override the command; see docker-compose.yml).
# The image runs the JavaScript tsc compiles into dist/ (tsconfig.build.json), as `npm start`
# does, not the sources through tsx: the worker idles at about 230 MiB resident that way, 290 MiB under tsx.

# ---- deps: install the locked dependency tree (dev dependencies included: typescript) ----
FROM node:20-bookworm-slim AS deps
WORKDIR /app
# Only the manifests first, so editing source does not invalidate the npm layer.
# The node 20 image ships npm 10, which ignores package.json's `allowScripts` field and runs
# install scripts (esbuild, @swc/core, protobufjs) as usual.
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --no-audit --no-fund

# ---- build: compile the sources into dist/ and the dashboard into dist/web/ (type errors fail the image build) ----
FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY api ./api
COPY db ./db
COPY worker ./worker
COPY workflows ./workflows
COPY activities ./activities
COPY services ./services
COPY temporal ./temporal
COPY launcher ./launcher
COPY lib ./lib
COPY shared ./shared
COPY mail ./mail
COPY scripts ./scripts
COPY client ./client
COPY web ./web
RUN node scripts/build.cjs && node scripts/build-web.cjs

# ---- prod-deps: drop dev-only packages ----
# A stage of its own, so a source edit rebuilds dist/ without pruning again. Prune removes
# typescript, jest and the @types packages; @swc/core (used by @temporalio/worker to bundle
# workflows) and @temporalio/* stay: they are runtime dependencies.
FROM deps AS prod-deps
RUN npm prune --omit=dev --no-audit --no-fund

# ---- runtime ----
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    DATA_DIR=/data \
    PORT=8080
WORKDIR /app

# Dependencies and code stay owned by root (read-only for the app user); only the
# data directory is writable. Creating /data here, owned by `node`, before VOLUME makes a
# fresh named volume inherit that ownership.
RUN mkdir -p /data && chown node:node /data

COPY --from=prod-deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
# Only the compiled code: nothing in the image reads the TypeScript sources (the worker bundles
# its workflows from dist/workflows).
COPY --from=build /app/dist ./dist

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

# node itself is the app process (no npm or shell in between), so SIGTERM from `docker stop`
# reaches the app directly.
CMD ["node", "dist/api/main.js"]
