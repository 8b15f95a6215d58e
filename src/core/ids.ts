/**
 * Ids that travel side by side as strings (an endpoint's and its Account's: in wake-ups, signals,
 * NOTIFY payloads) carry their kind in their type, so passing one for the other is a type error.
 * Rows read from Postgres name their ids with these types; anything else says what it holds with `as`.
 */
declare const kind: unique symbol;
type Id<K extends string> = string & { readonly [kind]: K };

export type EndpointId = Id<'EndpointId'>;
export type AccountId = Id<'AccountId'>;
