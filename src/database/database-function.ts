/**
 * A database function a module owns (created by a migration), as the code expects it: its name, its arguments
 * and what it returns, as PostgreSQL prints them (pg_get_function_identity_arguments, pg_get_function_result).
 * `inlined`: a read that PostgreSQL must be able to inline into the calling statement (LANGUAGE sql, STABLE or
 * IMMUTABLE, not STRICT, no SET clause). `genericPlans`: a function the usage write calls once per statement with
 * that statement's arrays, whose statements are planned once per session (`SET plan_cache_mode =
 * force_generic_plan`, migration 1764002540000-GenericPlansForUsageWrite.ts) as index probes whatever the tables'
 * size then (`SET enable_seqscan = off`, 1764002560000-IndexProbesForUsageWrite.ts); a CREATE OR REPLACE must say
 * both again. test/database-functions.e2e-spec.ts holds every one against the database, so a migration that changes a
 * function the code reads cannot go unnoticed.
 */
export interface DatabaseFunction {
  name: string;
  arguments: string;
  returns: string;
  inlined: boolean;
  genericPlans?: true;
}

/** The PostgreSQL types a function's columns have, and how node-postgres answers them (bigint: as numbers here). */
interface PgTypes {
  text: string;
  uuid: string;
  boolean: boolean;
  integer: number;
  bigint: number;
  jsonb: unknown;
  'timestamp with time zone': Date;
  'uuid[]': string[];
}

/** A row of a set-returning function with these columns (any may be NULL). */
export type RowOf<C extends Record<string, keyof PgTypes>> = { [K in keyof C]: PgTypes[C[K]] | null };

/** A set-returning read: `returns` is `TABLE(column type, …)` from its columns. */
export function tableFunction<C extends Record<string, keyof PgTypes>>(
  name: string,
  args: string,
  columns: C,
  inlined = true,
): DatabaseFunction & { columns: C } {
  const returns = `TABLE(${Object.entries(columns)
    .map(([column, type]) => `${column} ${type}`)
    .join(', ')})`;
  return { name, arguments: args, returns, inlined, columns };
}
