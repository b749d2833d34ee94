import { startTestServer, type TestServer } from '../helpers/server.js';

const MISSPELLED_FIELD = '{ custmers { data { id } } }';
const MISSPELLED_ENUM =
  'mutation { addOrganizationMember(organizationId: "o", customerId: "c", role: ownr) { role } }';
const MISSPELLED_INPUT = 'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }';
const MISSPELLED_INPUT_VARIABLES = { input: { emial: 'x@example.com' } };

function validationError(message: string, column: number) {
  return {
    message,
    locations: [{ line: 1, column }],
    extensions: { code: 'GRAPHQL_VALIDATION_FAILED', statusCode: 400 },
  };
}

function inputError(message: string) {
  return {
    message,
    locations: [{ line: 1, column: 10 }],
    extensions: { code: 'BAD_USER_INPUT', statusCode: 400 },
  };
}

const NOT_PROVIDED =
  'Variable "$input" got invalid value { emial: "x@example.com" }; Field "email" of required type "String!" was not provided.';
const NOT_DEFINED =
  'Variable "$input" got invalid value { emial: "x@example.com" }; Field "emial" is not defined by type "CreateCustomerInput".';

describe('GraphQL suggestions ("Did you mean …")', () => {
  describe('with introspection off (the production default)', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({ env: { GRAPHQL_INTROSPECTION: 'false' } });
    });
    afterAll(async () => {
      await server.close();
    });

    it('names no field in a validation error', async () => {
      expect(await server.graphql(MISSPELLED_FIELD)).toEqual({
        status: 400,
        body: { errors: [validationError('Cannot query field "custmers" on type "Query".', 3)] },
      });
    });

    it('names no enum value in a validation error', async () => {
      expect(await server.graphql(MISSPELLED_ENUM)).toEqual({
        status: 400,
        body: { errors: [validationError('Value "ownr" does not exist in "OrgRole" enum.', 78)] },
      });
    });

    it('names no input field when the variables do not fit their type', async () => {
      expect(await server.graphql(MISSPELLED_INPUT, MISSPELLED_INPUT_VARIABLES)).toEqual({
        status: 400,
        body: { errors: [inputError(NOT_PROVIDED), inputError(NOT_DEFINED)] },
      });
    });
  });

  describe('with introspection on (development), where the schema is public anyway', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({ env: { GRAPHQL_INTROSPECTION: 'true' } });
    });
    afterAll(async () => {
      await server.close();
    });

    it('keeps the suggestions', async () => {
      expect((await server.graphql(MISSPELLED_FIELD)).body).toEqual({
        errors: [
          validationError(
            'Cannot query field "custmers" on type "Query". Did you mean "customers" or "customer"?',
            3,
          ),
        ],
      });
      expect((await server.graphql(MISSPELLED_ENUM)).body).toEqual({
        errors: [
          validationError(
            'Value "ownr" does not exist in "OrgRole" enum. Did you mean the enum value "owner"?',
            78,
          ),
        ],
      });
      expect((await server.graphql(MISSPELLED_INPUT, MISSPELLED_INPUT_VARIABLES)).body).toEqual({
        errors: [inputError(NOT_PROVIDED), inputError(`${NOT_DEFINED} Did you mean "email"?`)],
      });
    });
  });
});
