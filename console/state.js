/** What the page shows, shared by its modules; the API stays the source of truth. */
export const state = {
  endpoints: [],
  /** paging.next of the endpoint list, when there are more. */
  endpointsAfter: undefined,
  /** The endpoint whose deliveries are open. */
  selected: undefined,
  /** The delivery page asked for: {} (newest), { after } or { before }. */
  page: {},
  older: undefined,
  newer: undefined,
  /** The delivery whose attempts are open. */
  open: undefined,
  streaming: false,
};
