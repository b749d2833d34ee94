import { readFileSync } from 'node:fs';
import path from 'node:path';
import ajv2020Module, { type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormatsModule from 'ajv-formats';
import type { Response } from 'supertest';
import YAML from 'yaml';

/**
 * Checks HTTP responses against `schema/openapi.yaml`, so the document cannot drift from the code.
 *
 *   expectOpenApiResponse(await server.http.get('/v1/customers').set(...));
 *
 * The operation is found from the request's method and path (query ignored), matching path templates
 * such as `/v1/customers/{id}` (literal paths win over templated ones). The status must be documented
 * for the operation; when the documented response has content, the `Content-Type` must be one of its
 * media types and the JSON body must validate against its schema; documented headers must be present
 * when required (the rate-limit headers are, on every response) and must validate. Throws an Error that
 * says what differs.
 */

// Both packages are CommonJS whose `module.exports` also carries itself as `.default`; `.default` is the
// spelling that TypeScript (nodenext) and Node's ESM loader agree on.
const Ajv2020 = ajv2020Module.default;
const addFormats = ajvFormatsModule.default;
type Ajv = InstanceType<typeof Ajv2020>;

const DOCUMENT_ID = 'https://tollgate.local/openapi.yaml';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

type Json = Record<string, any>;

interface Loaded {
  readonly document: Json;
  readonly ajv: Ajv;
  readonly templates: { template: string; regex: RegExp; literalLength: number }[];
  readonly validators: Map<string, ValidateFunction>;
}

let loaded: Loaded | undefined;

function load(): Loaded {
  if (loaded) return loaded;
  const file = path.resolve(process.cwd(), 'schema/openapi.yaml');
  const document = YAML.parse(readFileSync(file, 'utf8')) as Json;
  // OpenAPI 3.1 schemas are JSON Schema 2020-12; `x-…` extensions and `example` are not keywords.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ ...document, $id: DOCUMENT_ID });
  const templates = Object.keys(document.paths ?? {}).map((template) => ({
    template,
    regex: new RegExp(
      `^${template
        .split(/(\{[^}]+\})/)
        .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('')}$`,
    ),
    literalLength: template.replace(/\{[^}]+\}/g, '').length,
  }));
  // Prefer the most specific template: `/v1/subscriptions/current` over `/v1/subscriptions/{id}`.
  templates.sort((a, b) => b.literalLength - a.literalLength);
  loaded = { document, ajv, templates, validators: new Map() };
  return loaded;
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Follows an OpenAPI `$ref` (local to the document) and returns the target and its JSON pointer. */
function deref(document: Json, value: Json, pointer: string): { value: Json; pointer: string } {
  let current = value;
  let at = pointer;
  for (let hops = 0; current && typeof current.$ref === 'string'; hops++) {
    if (hops > 10 || !current.$ref.startsWith('#/')) throw new Error(`unsupported $ref ${current.$ref}`);
    at = current.$ref.slice(1);
    current = at
      .split('/')
      .slice(1)
      .reduce<Json>((node, key) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], document);
  }
  if (current === undefined) throw new Error(`dangling reference at ${pointer}`);
  return { value: current, pointer: at };
}

function validatorAt(state: Loaded, pointer: string): ValidateFunction {
  const cached = state.validators.get(pointer);
  if (cached) return cached;
  const validate = state.ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
  state.validators.set(pointer, validate);
  return validate;
}

function explain(errors: ValidateFunction['errors']): string {
  return (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ');
}

/** The documented path template for a concrete request path, or undefined. */
export function matchOpenApiPath(requestPath: string): string | undefined {
  const pathname = requestPath.split('?')[0]!;
  return load().templates.find((t) => t.regex.test(pathname))?.template;
}

export interface ResponseUnderTest {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: unknown;
  readonly text?: string;
}

/**
 * Validates a response for `method` and `requestPath`; with a supertest response both are taken from
 * the request it answered.
 */
export function expectOpenApiResponse(
  res: Response | ResponseUnderTest,
  method?: string,
  requestPath?: string,
) {
  const state = load();
  const req = (res as { req?: { method?: string; path?: string } }).req;
  const verb = (method ?? req?.method ?? '').toLowerCase();
  const fullPath = requestPath ?? req?.path;
  if (!verb || !fullPath) throw new Error('OpenAPI check: the request method and path are unknown');
  if (!(METHODS as readonly string[]).includes(verb)) throw new Error(`OpenAPI check: bad method ${verb}`);
  const where = `${verb.toUpperCase()} ${fullPath} → ${res.status}`;

  const template = matchOpenApiPath(fullPath);
  if (!template) throw new Error(`OpenAPI: ${where}: the path is not documented`);
  const operation = state.document.paths[template][verb] as Json | undefined;
  if (!operation) throw new Error(`OpenAPI: ${where}: ${verb.toUpperCase()} ${template} is not documented`);

  const responses = operation.responses as Json;
  const statusKey = [String(res.status), `${String(res.status)[0]}XX`, 'default'].find((k) => k in responses);
  if (!statusKey) {
    throw new Error(
      `OpenAPI: ${where}: status not documented for ${template} (documented: ${Object.keys(responses).join(', ')}); body ${JSON.stringify(res.body)}`,
    );
  }
  const base = `/paths/${escapePointer(template)}/${verb}/responses/${statusKey}`;
  const { value: response, pointer: responsePointer } = deref(state.document, responses[statusKey], base);

  for (const [name, header] of Object.entries((response.headers ?? {}) as Json)) {
    const actual = res.headers[name.toLowerCase()];
    const resolved = deref(state.document, header, `${responsePointer}/headers/${escapePointer(name)}`);
    if (actual === undefined) {
      if (resolved.value.required === true) throw new Error(`OpenAPI: ${where}: header ${name} is missing`);
      continue;
    }
    if (!resolved.value.schema) continue;
    const validate = validatorAt(state, `${resolved.pointer}/schema`);
    if (!validate(Array.isArray(actual) ? actual.join(', ') : actual)) {
      throw new Error(`OpenAPI: ${where}: header ${name}=${String(actual)}: ${explain(validate.errors)}`);
    }
  }

  const content = response.content as Json | undefined;
  if (!content) return;
  const contentType = String(res.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  const mediaType = Object.keys(content).find((m) => m.toLowerCase() === contentType);
  if (!mediaType) {
    throw new Error(
      `OpenAPI: ${where}: content-type "${contentType}" is not one of ${Object.keys(content).join(', ')}`,
    );
  }
  if (!content[mediaType].schema) return;
  const validate = validatorAt(state, `${responsePointer}/content/${escapePointer(mediaType)}/schema`);
  if (!validate(res.body)) {
    throw new Error(
      `OpenAPI: ${where}: body does not match ${template} ${statusKey}: ${explain(validate.errors)}; body ${JSON.stringify(res.body)}`,
    );
  }
}
