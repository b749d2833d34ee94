import type { TriggerDef } from '@mikro-orm/core';

/**
 * The triggers that keep `customer_count` exact (the functions they call are created by migration
 * Migration20261123020903 and last replaced by Migration20261125120000). Statement-level with transition tables: one counter write per statement
 * and app, whatever the number of rows, so a bulk INSERT … SELECT or COPY costs one upsert, and a
 * TRUNCATE (which fires no row trigger) still empties the counts. The TRUNCATE trigger is created by the
 * migration only: information_schema.triggers, which the schema diff reads, never lists one.
 */

/** The transition tables each event's trigger reads. */
const REFERENCING = {
  insert: 'new table as new_rows',
  delete: 'old table as old_rows',
  update: 'old table as old_rows new table as new_rows',
} as const;

type StatementEvent = keyof typeof REFERENCING;

/** A statement-level trigger on `customer` with its transition tables, named `<prefix>_<event>`. */
function customerStatementTrigger(prefix: string, event: StatementEvent): TriggerDef {
  const name = `${prefix}_${event}`;
  return {
    name,
    timing: 'after',
    events: [event],
    forEach: 'statement',
    expression: `create trigger "${name}" after ${event} on "customer" referencing ${REFERENCING[event]} for each statement execute function "${name}_fn"()`,
  };
}

/**
 * The triggers of the three statement events, named `<prefix>_insert`, `_delete` and `_update`, each
 * calling the function of its name with `_fn` (the count's and the list notices' share this shape).
 */
export function customerStatementTriggers(prefix: string): Record<StatementEvent, TriggerDef> {
  return {
    insert: customerStatementTrigger(prefix, 'insert'),
    delete: customerStatementTrigger(prefix, 'delete'),
    update: customerStatementTrigger(prefix, 'update'),
  };
}

export const COUNT_TRIGGERS = customerStatementTriggers('customer_count');
