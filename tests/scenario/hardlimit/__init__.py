"""Scenarios of the ``hardlimit`` test model; importing the package registers the model."""

from statemodel.quota import registry
from tests.scenario.hardlimit.model import NAME, HardLimitModel

registry.register(NAME, HardLimitModel)
