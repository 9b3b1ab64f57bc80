# syntax=docker/dockerfile:1
# The service, against an external PostgreSQL: DATABASE_URL is required in this image. The embedded PostgreSQL
# (the `embedded-postgres` package and its ~60 MB of binaries) is a development dependency, so the production
# install below leaves it out. Pending migrations are applied at start, under an advisory lock.
#   docker build -t billing . && docker run -e DATABASE_URL=… -e PAYPROVIDER_WEBHOOK_SECRET=… \
#     -e PAYPROVIDER_SECRET_KEY=… -e PAYPROVIDER_PRICE_PRO=price_… -p 3000:3000 billing
#
# Every `npm ci` here runs with --ignore-scripts: nothing in the image needs an install script (TypeScript is
# compiled by tsc), and it keeps the install independent of how a given npm version treats "allowScripts".

# Build: full install, compile.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json ./packages/client/
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ormconfig.ts ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

# Production dependencies only: no embedded PostgreSQL, no test or build tools.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json ./packages/client/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# Runtime: compiled code and production dependencies, owned by root and run as the unprivileged `node` user,
# so the process cannot modify its own code.
FROM node:20-bookworm-slim
ENV NODE_ENV=production PORT=3000
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/api/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# `exec` leaves node as PID 1, so it receives SIGTERM itself and shuts down gracefully (up to 10 s of draining:
# give the container a stop timeout above that, e.g. `docker stop -t 15`, compose `stop_grace_period: 15s`).
CMD ["sh", "-c", "if [ -z \"$DATABASE_URL\" ]; then echo 'DATABASE_URL is required: this image has no embedded PostgreSQL' >&2; exit 1; fi; exec node dist/src/main.js"]
