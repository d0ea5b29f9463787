// Unit tests (test/*.spec.ts) of the modules that need no page: the protocols and the side
// panel's state. ts-jest compiles them with tsconfig.test.json (CommonJS, jest's types).
// A test of DOM drawing asks for jsdom in its docblock (`@jest-environment jsdom`: the
// approval cards under a notebook); jsdomShim.ts adds what Lumino needs there.
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  setupFiles: ['<rootDir>/test/jsdomShim.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }] }
};
