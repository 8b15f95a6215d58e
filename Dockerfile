# One image for both production processes: `npm run api` (the default) and `npm run worker`.
# Multi-stage: the build stage has the dev dependencies (TypeScript, the workflow bundler's
# webpack is a run-time dependency anyway) and runs `npm run build`; the runtime stage gets the
# compiled dist/ and production node_modules only, and runs as the unprivileged `node` user.
# With no Docker engine on the development machines, dev/dockerfile-build.ts carries this file out
# and test/cluster/dockerfile.test.ts runs the result; it refuses instructions it does not support.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY . .
RUN npm ci --no-audit --no-fund && npm run build

# Production dependencies only, and not the workspace packages (SDK, CLI, MCP server): the service
# imports none of them, and their links into ./packages would dangle in the runtime stage.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --workspaces=false --no-audit --no-fund

FROM node:20-bookworm-slim
WORKDIR /app
# No npm update check: a fresh container would ask the npm registry at every start. The API listens
# on every interface of the container (HOST), where the published port reaches it.
ENV NODE_ENV=production NPM_CONFIG_UPDATE_NOTIFIER=false HOST=0.0.0.0
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY dev/service.sh ./dev/service.sh
USER node
# `npm run api` / `npm run worker` run `node dist/src/<name>/main.js` when NODE_ENV=production.
CMD ["npm", "run", "api"]
