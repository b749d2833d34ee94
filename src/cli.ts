import { Command, CommanderError, Option } from 'commander';
import type { EmulatorOptions, PlanOptions } from './cli-commands.js';

/**
 * The `tollgate` command line: every command, its options and its help, parsed by commander. This file
 * loads no server code: an action imports its implementation (src/cli-commands.ts) only when it runs, so
 * `tollgate help` and `--help` answer at once and open neither a database connection nor a port.
 *
 * Exit codes: 0 done, 1 failed (one line on stderr says why), 2 usage error (no command, an unknown
 * command or option, a required option missing). JSON commands print only their JSON on stdout.
 */

const commands = () => import('./cli-commands.js');

const ENVIRONMENT_NOTE = `
Settings come from environment variables (see the configuration reference); a few that matter here:
  DATABASE_URL   PostgreSQL to use (unset in development: embedded PostgreSQL under DATA_DIR)
  NODE_ENV       production: every required variable must be set, and nothing is created implicitly`;

function example(...lines: string[]): string {
  return `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((line) => `  $ ${line}`).join('\n')}`;
}

/** The whole command tree, with help texts; actions are bound lazily. Exported for the help tests. */
export function createProgram(): Command {
  const program = new Command('tollgate')
    .usage('<command> [options]')
    .description(
      'Self-hostable customers, magic-link login, Stripe checkout, subscriptions and entitlements.',
    )
    // Inherited by every command added below: errors are thrown to runCli, which sets the exit code.
    .exitOverride()
    .showHelpAfterError()
    .configureOutput({ outputError: (message, write) => write(usageError(message)) })
    .helpCommand('help [command...]', 'print the help of tollgate or of a command')
    .addHelpText(
      'after',
      `\nRun \`tollgate <command> --help\` for a command's options and an example.\n` +
        'JSON commands print only their JSON on stdout; messages go to stderr. Exit codes: 0 done, 1 failed\n' +
        '(one line on stderr says why), 2 usage error (no command, an unknown command or option).',
    );

  // Checked once the command line is known to be valid otherwise: an unknown option is the better error.
  program.hook('preAction', (_program, command) => {
    for (const option of command.options) {
      if (REQUIRED.has(option) && command.getOptionValue(option.attributeName()) === undefined)
        command.error(`required option '${option.flags}' not specified`);
    }
  });

  program
    .command('serve')
    .description('start the HTTP service (REST /v1, GraphQL, dashboard), applying pending migrations first')
    .addHelpText(
      'after',
      `${ENVIRONMENT_NOTE}
  PORT, HOST     where to listen (default 4000 on 127.0.0.1)
  STRIPE_SECRET_KEY  unset in development: the bundled Stripe emulator runs on STRIPE_EMULATOR_PORT (12111)
${example('tollgate serve', 'PORT=8080 DATABASE_URL=postgres://localhost/tollgate tollgate serve')}`,
    )
    .action(async () => (await commands()).serve());

  program
    .command('migrate')
    .description('apply pending database migrations and exit (needs only DATABASE_URL in production)')
    .addHelpText(
      'after',
      `${ENVIRONMENT_NOTE}
The database must exist: \`tollgate db create\` creates it.
${example('DATABASE_URL=postgres://db.internal/tollgate NODE_ENV=production tollgate migrate')}`,
    )
    .action(async () => (await commands()).migrate());

  const db = program.command('db').description('manage the database itself').usage('<command> [options]');
  db.command('create')
    .description('create the database DATABASE_URL names, if it does not exist yet (needs only DATABASE_URL)')
    .addHelpText(
      'after',
      `
Connects to the same server's \`postgres\` database to create it; prints what it did. No other command
creates a database: a misspelt DATABASE_URL fails instead of starting on an empty one.
${example('DATABASE_URL=postgres://postgres@127.0.0.1:5432/tollgate tollgate db create')}`,
    )
    .action(async () => (await commands()).createDatabase());

  const apps = program.command('apps').description('manage apps (tenants)').usage('<command> [options]');
  apps
    .command('create')
    .description('create an app; prints {"appId","apiKey"} as JSON')
    .addOption(required('--name <name>', "the app's name"))
    .option(
      '--callback-url <pattern>',
      'a URL pattern magic links and checkouts may return to (repeatable; default: none)',
      collect,
    )
    .addHelpText(
      'after',
      example(`tollgate apps create --name "My app" --callback-url 'https://app.example.com/*'`),
    )
    .action(async (options: { name: string; callbackUrl?: string[] }) =>
      (await commands()).createApp(options),
    );

  const keys = program.command('keys').description('manage API keys').usage('<command> [options]');
  keys
    .command('create')
    .description('create another API key for an app; prints {"keyId","apiKey"} as JSON')
    .addOption(required('--app <appId>', "the app's id (app_…)"))
    .option('--name <name>', 'what the key is for, e.g. the server or job holding it (default: unnamed)')
    .addHelpText('after', example('tollgate keys create --app app_0123456789abcdef --name "billing worker"'))
    .action(async (options: { app: string; name?: string }) => (await commands()).createKey(options));

  const plans = program.command('plans').description('manage plans').usage('<command> [options]');
  plans
    .command('upsert')
    .description(
      'create or change a plan; --amount first creates the price at Stripe (or the emulator); prints the plan as JSON',
    )
    .addOption(required('--app <appId>', "the app's id (app_…)"))
    .addOption(required('--id <slug>', "the plan's id: lowercase letters, digits and dashes"))
    .option('--name <name>', "the plan's display name")
    .option('--price <priceId>', 'an existing Stripe price (price_…); not with --amount')
    .option('--amount <cents>', 'create a recurring price of this many cents; not with --price')
    .option('--currency <code>', 'currency of --amount (default: usd)')
    .option(
      '--interval <interval>',
      'billing interval of --amount: day, week, month or year (default: month)',
    )
    .option('--trial-days <n>', 'days of free trial (default: none)')
    .option('--features <json>', 'the entitlements as a JSON object (default: {})')
    .option('--default', 'make it the plan every new customer starts on (default: not default)')
    .addHelpText(
      'after',
      example(
        `tollgate plans upsert --app app_0123456789abcdef --id pro --name Pro --amount 1900 --trial-days 14 --features '{"projects": 10}'`,
      ),
    )
    .action(async (options: PlanOptions) => (await commands()).upsertPlan(options));

  program
    .command('sync')
    .description(
      're-read the Stripe subscriptions of every customer and organization of an app and apply them (as the periodic reconcile does); prints what changed as JSON',
    )
    .addOption(required('--app <appId>', "the app's id (app_…)"))
    .addHelpText('after', example('tollgate sync --app app_0123456789abcdef'))
    .action(async (options: { app: string }) => (await commands()).sync(options));

  const analytics = program
    .command('analytics')
    .description('check the MRR ledger behind the subscription analytics')
    .usage('<command> [options]');
  analytics
    .command('verify')
    .description(
      "compare each subscription's MRR movements with what it counts for now and list the differences as JSON (exit 1 when some remain)",
    )
    .option('--app <appId>', 'only this app (default: every app)')
    .option('--repair', 'append correcting movements for the differences (history is never rewritten)')
    .addHelpText(
      'after',
      example('tollgate analytics verify', 'tollgate analytics verify --app app_0123456789abcdef --repair'),
    )
    .action(async (options: { app?: string; repair?: boolean }) =>
      (await commands()).analyticsVerify(options),
    );
  analytics
    .command('backfill')
    .description(
      "count the subscriptions made before the MRR ledger existed (read from Stripe): one back-filled movement at each one's start; prints what it did as JSON",
    )
    .option('--app <appId>', 'only this app (default: every app)')
    .addHelpText('after', example('tollgate analytics backfill'))
    .action(async (options: { app?: string }) => (await commands()).analyticsBackfill(options));

  const operators = program
    .command('operators')
    .description('manage the people who sign in to the dashboard by e-mail, and their roles')
    .usage('<command> [options]');
  operators
    .command('add')
    .description('add an operator; prints the operator as JSON')
    .addOption(required('--email <address>', 'where their sign-in links go'))
    .addOption(
      required(
        '--role <role>',
        'owner (everything, manages operators), admin (everything else) or viewer (reads)',
      ),
    )
    .addHelpText('after', example('tollgate operators add --email alice@example.com --role owner'))
    .action(async (options: { email: string; role: string }) => (await commands()).addOperator(options));
  operators
    .command('list')
    .description('list the operators as JSON, oldest first')
    .addHelpText('after', example('tollgate operators list'))
    .action(async () => (await commands()).listOperators());
  operators
    .command('remove')
    .description('remove an operator, ending their dashboard sessions at once (never the last owner)')
    .addOption(required('--email <address>', "the operator's e-mail address"))
    .addHelpText('after', example('tollgate operators remove --email bob@example.com'))
    .action(async (options: { email: string }) => (await commands()).removeOperator(options));

  program
    .command('stripe-emulator')
    .description('run the bundled Stripe emulator on its own, for a Tollgate started with STRIPE_API_BASE')
    .option('--port <port>', 'port to listen on (default: STRIPE_EMULATOR_PORT, else 12111)')
    .option(
      '--webhook-url <url>',
      'where it sends Stripe events (default: PUBLIC_BASE_URL/v1/webhooks/stripe, else http://localhost:PORT/…)',
    )
    .option(
      '--webhook-secret <secret>',
      'the signing secret of those events (default: STRIPE_WEBHOOK_SECRET, else a new whsec_… printed at start)',
    )
    .option('--state <file>', 'keep its objects in this JSON file across restarts (default: in memory only)')
    .addHelpText(
      'after',
      example('tollgate stripe-emulator --port 12111 --webhook-url http://localhost:4000/v1/webhooks/stripe'),
    )
    .action(async (options: EmulatorOptions) => (await commands()).stripeEmulator(options));

  return program;
}

/** Options a command cannot run without (commander's own mandatory check runs before its unknown-option check). */
const REQUIRED = new WeakSet<Option>();

function required(flags: string, description: string): Option {
  const option = new Option(flags, `${description} (required)`);
  REQUIRED.add(option);
  return option;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** commander's `error: unknown option '--x'` as Tollgate says it: `tollgate: Unknown option '--x'`. */
function usageError(message: string): string {
  const text = message.replace(/^error: /, '');
  const unknownCommand = /^unknown command '([^']*)'/.exec(text);
  if (unknownCommand)
    return `tollgate: Unknown command: ${unknownCommand[1]}${text.slice(unknownCommand[0].length)}`;
  return `tollgate: ${text.charAt(0).toUpperCase()}${text.slice(1)}`;
}

/** Runs one command line; a long-running command (serve, stripe-emulator) keeps the process alive. */
export async function runCli(argv: readonly string[]): Promise<void> {
  // `tollgate help apps create` is `tollgate apps create --help` (commander's help command takes one name).
  const args = argv[0] === 'help' && argv.length > 2 ? [...argv.slice(1), '--help'] : [...argv];
  try {
    await createProgram().parseAsync(args, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help asked for: 0. Anything else commander refuses (including a bare `tollgate`) is a usage error.
      process.exitCode = error.exitCode === 0 ? 0 : 2;
      return;
    }
    process.stderr.write(`tollgate: ${await describeFailure(error)}\n`);
    // Whatever a failed command left open (a pool, a timer) must not keep the process alive.
    process.exit(1);
  }
}

/**
 * One line for the failures with a fix in the operator's hands (configuration, start-up, invalid input);
 * a stack for anything else, which is a bug. Loaded only on failure, when the server code is loaded anyway.
 */
async function describeFailure(error: unknown): Promise<string> {
  const [{ ConfigError }, { StartupError }, { DomainError }] = await Promise.all([
    import('./config.js'),
    import('./core/startup-errors.js'),
    import('./core/errors.js'),
  ]);
  if (error instanceof ConfigError || error instanceof StartupError || error instanceof DomainError) {
    return error.message;
  }
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
