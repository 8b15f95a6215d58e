/** Column lists named in place of `SELECT *`: a prepared statement's result must not change when a migration adds a column. */

/**
 * `true` only when `Listed` names every field of `Row` but the `Derived` ones its statements
 * compute: asserted beside a column list, a field added to the row type and not to the list fails
 * to compile there, instead of reading undefined.
 */
export type EveryFieldListed<Row, Listed, Derived = never> = Exclude<keyof Row, Listed | Derived> extends never ? true : never;
