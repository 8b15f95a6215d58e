import type { z } from 'zod';
import { ApiError } from './errors.js';

/** Which error code a failing field maps to (SPEC 7); other fields give `invalid_request`. */
const FIELD_CODES: Record<string, string> = {
  url: 'invalid_url',
  events: 'invalid_events',
  secret: 'invalid_secret',
  customer_id: 'invalid_customer_id',
};

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(422, 'invalid_request', 'request body must be a JSON object');
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    throw new ApiError(422, 'invalid_request', `unknown field: ${issue.keys.join(', ')}`);
  }
  const code = FIELD_CODES[String(issue.path[0])] ?? 'invalid_request';
  throw new ApiError(422, code, field ? `${field}: ${issue.message}` : issue.message);
}
