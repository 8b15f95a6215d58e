#!/usr/bin/env node
// `webhooks-admin`: the operator CLI of a checkout (the root package's bin). Like `npm run admin`,
// it runs the TypeScript source through tsx, a run-time dependency of the service itself.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
