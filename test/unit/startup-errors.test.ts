import { databaseFailure, listenFailure, StartupError, serverOf } from '../../src/core/startup-errors.js';

function errno(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

describe('start-up error messages', () => {
  it('names host and port of a database URL, with defaults and socket directories, never its credentials', () => {
    expect(serverOf('postgres://u:pw@db.example.com:6543/app')).toBe('db.example.com:6543');
    expect(serverOf('postgres://u:pw@db.example.com/app')).toBe('db.example.com:5432');
    expect(serverOf('postgres:///app?host=/run/postgresql')).toBe('/run/postgresql:5432');
    expect(serverOf('not a url')).toBe('an unparsable URL');
  });

  it('joins the per-address errors of a connection to localhost into one line', () => {
    const error = Object.assign(
      new AggregateError([
        errno('ECONNREFUSED', 'connect ECONNREFUSED ::1:5999'),
        errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5999'),
      ]),
      { code: 'ECONNREFUSED' },
    );
    const failure = databaseFailure(error, 'postgres://u@localhost:5999/x', 'DATABASE_URL');
    expect(failure).toBeInstanceOf(StartupError);
    expect((failure as Error).message).toBe(
      'cannot connect to PostgreSQL at localhost:5999 (DATABASE_URL): connect ECONNREFUSED ::1:5999; connect ECONNREFUSED 127.0.0.1:5999',
    );
  });

  it('reports a refused login by its SQLSTATE, and hides the password should a message quote it', () => {
    const error = errno('28P01', 'password authentication failed: got s3cr%t');
    const failure = databaseFailure(error, 'postgres://u:s3cr%25t@db:5432/x', 'DATABASE_URL') as Error;
    expect(failure.message).toBe(
      'cannot connect to PostgreSQL at db:5432 (DATABASE_URL): password authentication failed: got [redacted]',
    );
  });

  it('leaves other failures alone: a failing migration or a bug keeps its own error and stack', () => {
    const sqlError = errno('42P01', 'relation "x" does not exist');
    expect(databaseFailure(sqlError, 'postgres://db/x', 'DATABASE_URL')).toBe(sqlError);
    const bug = new TypeError('x is not a function');
    expect(databaseFailure(bug, 'postgres://db/x', 'DATABASE_URL')).toBe(bug);
    expect(listenFailure(bug, { port: 1, host: '127.0.0.1', variable: 'PORT' })).toBe(bug);
  });

  it('names the variable for a port that may not be opened, and brackets IPv6 hosts', () => {
    const failure = listenFailure(errno('EACCES', 'listen EACCES'), {
      port: 80,
      host: '::1',
      variable: 'PORT',
    });
    expect((failure as Error).message).toBe(
      'port 80 may not be opened by this user ([::1]:80): set PORT to a port above 1023',
    );
  });
});
