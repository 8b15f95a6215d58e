/**
 * The provider's Graph error codes the platform reacts to. The local provider answers with the
 * same constants, so the two sides cannot drift apart.
 */
export const GRAPH_CODE = {
  /** OAuthException: the token used is not (or no longer) valid. */
  oauth: 190,
  invalidParameter: 100,
  /** Media upload error: the media referred to has not finished processing yet. */
  mediaNotReady: 131053,
  /** Message undeliverable (in a failed status). */
  undeliverable: 131026,
} as const;

/** error_subcode of a media send refused because the upload is still processing. */
export const MEDIA_PROCESSING_SUBCODE = 2494102;

/** error_subcode of an invalid token (code 190), as in the provider's debug-token answer. */
export const TOKEN_SUBCODE = {
  /** The user revoked the app's access (deauthorized it). */
  revoked: 458,
  /** The session was invalidated (password changed, logged out). */
  invalidated: 460,
  expired: 463,
  invalid: 467,
} as const;
