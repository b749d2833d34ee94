import pg from 'pg';
import { ConfigError } from '../config.js';
import { databaseFailure } from '../core/startup-errors.js';

/** Server-level helpers: create/drop a database (scratch databases of tests and scripts, `tollgate db create`). */
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

/**
 * Creates the database `url` names unless it exists, connecting to the same server's maintenance
 * database (`postgres`, else `template1`) with the same credentials. Only `tollgate db create` calls it.
 */
export async function createDatabaseOf(url: string): Promise<{ name: string; created: boolean }> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) throw new ConfigError('DATABASE_URL names no database (e.g. postgres://host:5432/tollgate)');
  const maintenance = (database: string) => {
    const admin = new URL(url);
    admin.pathname = `/${database}`;
    return admin.toString();
  };
  const create = (client: pg.Client) =>
    client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]).then(async ({ rowCount }) => {
      if (rowCount) return false;
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      return true;
    });
  let created: boolean;
  try {
    created = await withServerClient(maintenance('postgres'), create);
  } catch (error) {
    if ((error as { code?: unknown }).code !== '3D000') throw databaseFailure(error, url, 'DATABASE_URL');
    created = await withServerClient(maintenance('template1'), create).catch((e: unknown) => {
      throw databaseFailure(e, url, 'DATABASE_URL');
    });
  }
  return { name, created };
}
