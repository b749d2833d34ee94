import { type ApolloServer, HeaderMap } from '@apollo/server';
import type { Request, RequestHandler, Response } from 'express';

/**
 * Express in front of Apollo: what `@as-integrations/express5` does, without its per-request cost. That
 * integration runs Node's legacy `url.parse` on every URL only to take its query string, and copies the
 * headers through `Object.entries`; both showed in CPU profiles of a small query. The query string is cut
 * out of the URL as `url.parse` reads it (from the first `?` to any `#`); its escaping of characters such
 * as `{` or `"` made no difference, since Apollo decodes the parameters again. Everything else (the
 * missing-body answer, headers, status, a complete or an incremental body) is as that integration does it.
 */
export function graphqlHttpHandler<TContext extends object>(
  server: ApolloServer<TContext>,
  context: (args: { req: Request; res: Response }) => Promise<TContext>,
): RequestHandler {
  server.assertStarted('graphqlHttpHandler()');
  return async (req, res) => {
    if (!('body' in req)) {
      res.status(500);
      res.send(
        '`req.body` is not set; this probably means you forgot to set up the ' +
          '`json` middleware before the Apollo Server middleware.',
      );
      return;
    }
    const headers = new HeaderMap();
    const incoming = req.headers;
    for (const key in incoming) {
      const value = incoming[key];
      if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
    }
    const response = await server.executeHTTPGraphQLRequest({
      httpGraphQLRequest: {
        method: req.method.toUpperCase(),
        headers,
        search: searchOf(req.url),
        body: req.body,
      },
      context: () => context({ req, res }),
    });
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status || 200;
    if (response.body.kind === 'complete') {
      res.send(response.body.string);
      return;
    }
    // Compression middleware, when present, buffers until flushed.
    const flushable = res as Response & { flush?: () => void };
    for await (const chunk of response.body.asyncIterator) {
      res.write(chunk);
      if (typeof flushable.flush === 'function') flushable.flush();
    }
    res.end();
  };
}

/** The URL's query string with its `?` (empty without one), up to a fragment, as `url.parse(url).search`. */
function searchOf(url: string): string {
  const hash = url.indexOf('#');
  const end = hash < 0 ? url.length : hash;
  const question = url.indexOf('?');
  return question < 0 || question > end ? '' : url.slice(question, end);
}
