// Unit tests (test/*.spec.ts) of the modules that need no page: the protocols and the side
// panel's state. ts-jest compiles them with tsconfig.test.json (CommonJS, jest's types).
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }] }
};
