/** OpenAPI paths: The messaging provider's webhooks (signed by the provider, no API key). */
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { ErrorEnvelope } from '../schemas/common.js';
import { json } from './common.js';

export const providerPaths: RouteConfig[] = [
  ...['chatapp', 'photoapp'].map((channel): RouteConfig => ({
    method: 'post',
    path: `/provider/${channel}/webhook`,
    summary: `Messaging provider webhook of the ${channel} channel (X-Hub-Signature-256), not for API clients`,
    request: { body: { content: { 'application/json': { schema: z.record(z.string(), z.unknown()) } } } },
    responses: {
      200: json(z.object({ received: z.boolean(), events: z.number().int().optional() })),
      401: { description: 'Bad signature', content: { 'application/json': { schema: ErrorEnvelope } } },
    },
  })),
];
