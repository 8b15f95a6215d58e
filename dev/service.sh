#!/bin/sh
# `npm run api` / `npm run worker`: in production (NODE_ENV=production) the compiled code of
# `npm run build`, with plain node (no TypeScript loader at run time); otherwise the TypeScript
# source with tsx, as the tests and the benchmark run it. `exec` here and in the npm scripts so
# node is npm's own child: npm passes SIGTERM (`docker stop`) to that child only, and a shell in
# between would die of it and leave node running.
name="$1"
if [ "$NODE_ENV" = production ]; then
  entry="dist/src/$name/main.js"
  if [ ! -f "$entry" ]; then
    echo "$entry is missing: run \`npm run build\` first (NODE_ENV=production runs the compiled code)." >&2
    exit 2
  fi
  exec node "$entry"
fi
exec tsx "src/$name/main.ts"
