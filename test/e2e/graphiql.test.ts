import { type Browser, chromium } from 'playwright-core';
import { chromiumRequirement, describeRequiring } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** Debian's chromium (`.ci/run` installs it when missing); CHROMIUM_PATH points elsewhere. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

describeRequiring(chromiumRequirement(CHROMIUM), 'GraphiQL in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  beforeAll(async () => {
    server = await startTestServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('serves the page and its scripts from Tollgate itself', async () => {
    const page = await server.http.get('/graphql').set('accept', 'text/html,application/xhtml+xml,*/*;q=0.8');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    const sources = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(sources).toEqual([
      '/graphql/assets/graphiql.css',
      '/graphql/assets/react.js',
      '/graphql/assets/react-dom.js',
      '/graphql/assets/graphiql.js',
      '/graphql/assets/start.js',
    ]);
    for (const source of sources) {
      const asset = await server.http.get(source!);
      expect(asset.status).toBe(200);
      expect(asset.headers['content-type']).toMatch(/^text\/(javascript|css)/);
    }
    // A GraphQL client asking for JSON still gets GraphQL, not the page.
    const json = await server.http
      .get('/graphql?query=%7B__typename%7D')
      .set('apollo-require-preflight', 'true');
    expect(json.body).toEqual({ data: { __typename: 'Query' } });
  });

  it('runs a query with an API key set in the headers editor, without leaving the machine', async () => {
    const { apiKey } = await server.createApp();
    const email = `graphiql-${Date.now()}@example.com`;
    const created = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email });
    expect(created.status).toBe(201);

    const context = await browser.newContext();
    const page = await context.newPage();
    const foreign: string[] = [];
    await page.route('**/*', (route) => {
      if (route.request().url().startsWith(server.url)) return route.continue();
      foreign.push(route.request().url());
      return route.abort();
    });
    await page.goto(`${server.url}/graphql`);
    await page.locator('.graphiql-container').waitFor({ timeout: 15_000 });

    const query = '{ customers(email: "graphiql-") { data { id email } pagination { total } } }';
    await page.evaluate((text) => {
      const editor = document.querySelector('.graphiql-query-editor .CodeMirror') as any;
      editor.CodeMirror.setValue(text);
    }, query);

    // The headers editor is open on start; replace its template with the key, as a person would.
    const headers = page.locator('.graphiql-editor-tool .CodeMirror').filter({ visible: true });
    await headers.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.insertText(JSON.stringify({ Authorization: `Bearer ${apiKey}` }));

    await page.locator('.graphiql-execute-button').click();
    const result = page.locator('.result-window');
    await result.getByText(email).waitFor({ timeout: 15_000 });
    const shown = JSON.parse(
      await page.evaluate(() =>
        (document.querySelector('.result-window .CodeMirror') as any).CodeMirror.getValue(),
      ),
    );
    expect(shown).toEqual({
      data: { customers: { data: [{ id: created.body.id, email }], pagination: { total: 1 } } },
    });
    expect(foreign).toEqual([]);
    await context.close();
  });
});
