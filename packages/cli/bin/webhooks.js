#!/usr/bin/env node
// The CLI is TypeScript source, like the SDK it uses; tsx compiles it on the fly.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
