import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.js';
import { chromiumRequirement, describeRequiring } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** Debian's chromium (`.ci/run` installs it when missing); CHROMIUM_PATH points elsewhere. */

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

  it('lets a page of an allowed origin POST /graphql cross-origin while GraphiQL is served there', async () => {
    // A foreign page's own server: an empty page, reached as http://localhost:<port> (an origin a
    // development Tollgate allows) and as http://127.0.0.1:<port> (an origin no app allows).
    const pages = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<p>app</p>'),
    );
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    const port = (pages.address() as AddressInfo).port;
    const page = await browser.newPage();
    try {
      // GraphiQL is served at /graphql: its router answers GET and HEAD there, but not the preflight.
      const graphiql = await server.http.get('/graphql').set('accept', 'text/html');
      expect(graphiql.headers['content-type']).toMatch(/^text\/html/);
      const post = (url: string) =>
        page.evaluate(async (graphql) => {
          try {
            const res = await fetch(graphql, {
              method: 'POST',
              // JSON is not a form's content type: the browser sends a preflight first.
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ query: '{ __typename }' }),
            });
            return { status: res.status, body: await res.json() };
          } catch (error) {
            return { failed: String(error) };
          }
        }, url);
      await page.goto(`http://localhost:${port}/`);
      expect(await post(`${server.url}/graphql`)).toEqual({
        status: 200,
        body: { data: { __typename: 'Query' } },
      });
      await page.goto(`http://127.0.0.1:${port}/`);
      expect(await post(`${server.url}/graphql`)).toEqual({ failed: 'TypeError: Failed to fetch' });
    } finally {
      await page.close();
      await new Promise((resolve) => pages.close(resolve));
    }
  });
});
