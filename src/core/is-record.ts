/** A JSON object (not null, not an array): the check every reader of untyped JSON makes first. */
export const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
