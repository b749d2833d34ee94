import type { TriggerDef } from '@mikro-orm/core';

/**
 * The triggers that keep `customer_count` exact (the functions they call are created by migration
 * Migration20261123020903 and last replaced by Migration20261125120000). Statement-level with transition tables: one counter write per statement
 * and app, whatever the number of rows, so a bulk INSERT … SELECT or COPY costs one upsert, and a
 * TRUNCATE (which fires no row trigger) still empties the counts. The TRUNCATE trigger is created by the
 * migration only: information_schema.triggers, which the schema diff reads, never lists one.
 */

function statementTrigger(event: 'insert' | 'delete' | 'update', referencing: string): TriggerDef {
  const name = `customer_count_${event}`;
  return {
    name,
    timing: 'after',
    events: [event],
    forEach: 'statement',
    expression: `create trigger "${name}" after ${event} on "customer" referencing ${referencing} for each statement execute function "${name}_fn"()`,
  };
}

export const COUNT_TRIGGERS = {
  insert: statementTrigger('insert', 'new table as new_rows'),
  delete: statementTrigger('delete', 'old table as old_rows'),
  update: statementTrigger('update', 'old table as old_rows new table as new_rows'),
};
