// The aws-ec2 backend's entry point: the capacity provider of ec2_capacity_provider.h.
#include "ec2_capacity_provider.h"

TESSERA_PLUGIN(tessera::aws_ec2::Ec2CapacityProvider, "aws-ec2", "1.0.0",
               TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER)
