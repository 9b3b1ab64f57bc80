// Provider meters (spec §13): windows, delivery through the job queue, the sandbox's meter. Its own group, apart
// from billing's, because delivery waits on windows closing and on the queue: two shorter groups share the
// Jest workers better than one long one (see jest.config.js).
import '../billing-meters.e2e-spec';
import '../billing-meters-delivery.e2e-spec';
