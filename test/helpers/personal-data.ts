/** Runs one statement against the test database (each test file passes its own). */
export type RunSql = <T>(query: string, params?: unknown[]) => Promise<T[]>;

/**
 * Every text and JSON column of every table (the job queue's schema too) that holds one of `needles`,
 * as `schema.table.column holds needle` (case-insensitively, or exactly).
 */
export async function wherePersonalDataRemains(sql: RunSql, needles: string[]): Promise<string[]> {
  const columns = await sql<{ table_schema: string; table_name: string; column_name: string }>(
    `select c.table_schema, c.table_name, c.column_name
       from information_schema.columns c
       join information_schema.tables t using (table_schema, table_name)
      where c.table_schema not in ('pg_catalog', 'information_schema')
        and t.table_type = 'BASE TABLE'
        and c.data_type in ('text', 'character varying', 'character', 'json', 'jsonb')`,
  );
  expect(columns.length).toBeGreaterThan(20);
  expect(columns.some((c) => c.table_schema !== 'public')).toBe(true);
  // One query per column for every needle, a few columns at a time: the scan reads the whole shared test
  // database, which the other test files fill while it runs (one query per column and needle, one at a
  // time, once took more than 30 s of a full run).
  const found: string[] = [];
  const scanColumn = async ({ table_schema, table_name, column_name }: (typeof columns)[number]) => {
    const rows = await sql<{ needle: string }>(
      `select needles.needle from jsonb_array_elements_text(?::jsonb) as needles(needle)
        where exists (select 1 from "${table_schema}"."${table_name}"
                       where strpos(lower("${column_name}"::text), lower(needles.needle)) > 0
                          or strpos("${column_name}"::text, needles.needle) > 0)`,
      [JSON.stringify(needles)],
    );
    for (const { needle } of rows) found.push(`${table_schema}.${table_name}.${column_name} holds ${needle}`);
  };
  for (let i = 0; i < columns.length; i += 4) await Promise.all(columns.slice(i, i + 4).map(scanColumn));
  return found;
}
