"""Your own project: `stepline init` scaffolds one (an agent, its tests, its deployment).

`stepline.project.scaffold.init_project` writes it; `stepline.project.template` derives its SAM
template from Stepline's. Nothing is imported here, so the `stepline` command stays light.
"""
