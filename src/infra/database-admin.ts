import pg from 'pg';

/** Server-level helpers (create/drop database) used by tests and scripts that need a scratch database. */
export async function withServerClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates an empty database beside the one in `url` and returns its URL. */
export async function createScratchDatabase(url: string, name: string): Promise<string> {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`unsafe database name: ${name}`);
  await withServerClient(url, (c) => c.query(`CREATE DATABASE ${name}`));
  const scratch = new URL(url);
  scratch.pathname = `/${name}`;
  return scratch.toString();
}

export async function dropDatabase(url: string, name: string): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`unsafe database name: ${name}`);
  await withServerClient(url, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}
