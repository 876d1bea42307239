// The test backend (test_backend.h) as a plugin shared object.
#include "test_backend.h"

TESSERA_PLUGIN(tessera::testing::TestBackend, "test-backend", "0.1.0", TESSERA_PLUGIN_KIND_EXECUTOR)
