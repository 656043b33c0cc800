"""Shared pytest fixtures; the reference-data rule: under CI (``CI=true``) a missing reference
folder stops the test run with a failure; elsewhere the tests that need it are skipped, saying why;
and the fast subset, ``python -m pytest -q -m fast`` (README): the tests named in :data:`FAST`, at
least one per test module (tests/test_fast_subset.py checks the list against the files)."""

import os
from pathlib import Path

import pytest

from workbench.shared_data import missing_reason, shared_data_dir

#: The read-only reference problems (Siconos, LMGC90), outside the repository (see workbench.shared_data).
SHARED_DATA = shared_data_dir()


#: the fast subset (marker ``fast``): per test module, the test functions that run in it (every
#: parameter of a parametrised one), chosen to be quick; every test module is here or in FAST_EXEMPT
FAST = {
    "test_accuracy.py": ("test_one_run_reaches_each_level_at_the_first_iterate_below_it",),
    "test_first_factorisation_forecast.py": ("test_the_forecast_is_not_asked_without_a_limit_or_for_a_small_matrix",),
    "test_limit_ceilings.py": ("test_every_limit_has_a_ceiling_above_its_default",),
    "test_native_memory.py": ("test_the_forecast_of_the_address_space",),
    "test_study_file_values.py": ("test_every_shipped_study_is_far_within_the_limit",),
    "test_work_declared.py": ("test_every_registered_builder_declares_its_work",),
    "test_simulate_streaming.py": ("test_blocks_hold_every_row_in_order_and_the_columns_of_the_first",
                                   "test_files_are_the_table_of_every_step_and_every_kth_state"),
    "test_environment_and_api.py": ("test_solve_options_are_checked_at_construction_with_the_clis_words",),
    "test_families.py": ("test_names_address_a_family_and_each_member",),
    "test_fuzz_scales.py": ("test_reproducer_mu_1e300_ncp_newton_is_not_solved",),
    "test_rescaled.py": ("test_the_exponent_is_zero_within_the_safe_range_and_brings_the_data_near_one",),
    "test_admm.py": ("test_a_non_symmetric_W_takes_the_lu",),
    "test_lean.py": ("test_a_lean_run_takes_the_fallback_start_when_line_6_gives_no_ratio",
                     "test_the_condensed_matrix_is_numpys_symmetric_part_in_csr"),
    "test_judging_units.py": ("test_a_point_within_tol_only_in_the_problems_units_is_refused_naming_both_measures",),
    "test_held_results_folder.py": ("test_a_folder_swapped_between_two_writes_is_refused_and_nothing_goes_elsewhere",),
    "test_members_stats.py": ("test_ranks_are_the_binomial_tables",),
    "test_printable_names.py": ("test_printable_escapes_the_class",),
    "test_scale_bound.py": ("test_iteration_bytes_of_a_local_problem",),
    "test_split.py": ("test_rule_by_hand_on_four_names",),
    "test_stack_shapes.py": ("test_geometry_counted_by_hand",),
    "test_status.py": ("test_the_table_is_read_by_every_reader",),
    "test_tiny_profile.py": ("test_self_costs_by_object",),
    "test_work_counted.py": ("test_the_declared_work_bounds_the_product_before_anything_is_built",),
    "test_assembly.py": ("test_compiled_assembly_equals_the_reference_on_random_packings",),
    "test_bad_input.py": ("test_the_corpus_is_large_enough",),
    "test_benchmarks.py": ("test_one_sided_failure_counts_as_the_time_limit",),
    "test_blocks.py": ("test_kernels_against_numpy",),
    "test_kernel_cache.py": ("test_a_first_check_clears_and_stamps_then_the_cache_is_kept",),
    "test_calibrate.py": ("test_bisection_finds_the_floor_of_a_falling_step_count",),
    "test_cli.py": ("test_info_and_list",),
    "test_check_export.py": ("test_what_it_cannot_check_is_one_line",),
    "test_compaction.py": ("test_a_settled_packing_is_read_at_rest_with_its_container",),
    "test_condense.py": ("test_corpus_files_condensed_agree_with_the_sparse_path",),
    "test_cones_metrics.py": ("test_projection_is_the_moreau_decomposition",),
    "test_conformance.py": ("test_the_results_page_is_the_method_table_and_the_promises",),
    "test_conic_robustness.py": ("test_clarabel_on_a_step_whose_contacts_all_separate_returns_zero_impulses",),
    "test_contract.py": ("test_every_solver_records_the_history_schema_and_a_stop_cause",),
    "test_counts.py": ("test_the_terminal_the_report_and_load_results_count_the_same",),
    "test_dask_cluster.py": ("test_a_killed_worker_is_reported_and_nothing_recorded_is_computed_again",),
    "test_did_you_mean.py": ("test_a_mistyped_name_gets_the_closest_and_the_known_names",),
    "test_docs_claims.py": ("test_committed_docs_agree_with_their_results",),
    "test_drum.py": ("test_drum_surface_velocity_enters_the_free_velocity",),
    "test_dynamics.py": ("test_exact_methods_exist",),
    "test_ellipsoid.py": ("test_spheres_are_the_sphere_case",),
    "test_exact.py": ("test_fixed_point_gives_the_analytic_ball_impulse",),
    "test_export.py": ("test_fclib_export_round_trips_exactly_with_solution_and_guess",),
    "test_fast_subset.py": ("test_every_test_module_is_in_the_fast_subset_or_exempt_with_a_reason",
                            "test_every_fast_test_exists_and_is_not_slow"),
    "test_figures.py": ("test_convergence_labels_markers_and_spread_legend",),
    "test_first_call.py": ("test_the_metrics_kernel_computes_the_relative_velocity_of_apply_n_to_the_bit",),
    "test_formulations.py": ("test_rolling_ball_relaxed_optimum",),
    "test_fuzz_budgets.py": ("test_runs_are_counted_from_the_declaration_before_expanding",),
    "test_fuzz_escapes.py": ("test_every_declared_backend_setting_is_typed_ranged_and_names_no_file",),
    "test_fuzz_numbers.py": ("test_the_one_parser_gives_a_bounded_number_or_one_line",),
    "test_fuzz_rows.py": ("test_a_good_row_reads",),
    "test_generate.py": ("test_broad_phase_finds_exactly_the_brute_force_pairs",),
    "test_handover.py": ("test_load_results_carries_the_hand_overs",),
    "test_hardening.py": ("test_a_study_name_is_a_name_not_a_path",),
    "test_hostile_files.py": ("test_npz_with_a_non_monotone_indptr_is_refused_before_scipy_sorts_it",),
    "test_io.py": ("test_fclib_round_trip_of_a_sample_is_exact",),
    "test_ipm.py": ("test_relaxed_ball_gives_the_relaxed_optimum",),
    "test_iterative.py": ("test_anti_relaxed_ball_gives_the_analytic_coulomb_impulse",),
    "test_layers.py": ("test_every_module_is_in_a_layer_and_imports_only_its_own_or_lower_layers",),
    "test_lcp.py": ("test_lemke_matches_brute_force_on_random_p_matrix_lcps",),
    "test_method.py": ("test_a_method_resolves_and_checks_once_and_solves_the_analytic_ball",),
    "test_plotting_docs.py": ("test_plotting_example_runs_and_draws_the_figures_it_shows",),
    "test_policies.py": ("test_one_iteration_cap_per_solver",),
    "test_problem.py": ("test_rolling_ball_N_and_r_match_seed_000_eqs_46_47",),
    "test_progress.py": ("test_the_heartbeat_prints_plain_lines_while_a_step_takes_long",),
    "test_recipes.py": ("test_add_a_solver",),
    "test_record.py": ("test_the_rows_and_the_loaded_table_follow_the_declaration_column_by_column",),
    "test_report.py": ("test_shifted_geometric_mean_against_hand_values",),
    "test_report_top.py": ("test_the_top_of_the_page_is_the_conclusions_in_sentences_and_one_figure",),
    "test_reproduction.py": ("test_within_a_relative_tolerance",),
    "test_settledness.py": ("test_an_exact_power_law_gives_its_slope_with_no_uncertainty",),
    "test_shared_problems.py": ("test_primal_and_dual_agree_on_small_global_problems",),
    "test_sources.py": ("test_every_named_source_builds_and_scenes_have_contacts",),
    "test_stacks.py": ("test_geometry",),
    "test_study.py": ("test_bad_study_files_exit_2_with_one_line_naming_the_problem",),
    "test_study_scale.py": ("test_scale_study_parses_and_plans",),
    "test_blas_independence.py": ("test_the_jacobi_step_keeps_its_stated_bits_and_passes_a_non_finite_one",),
    "test_threads.py": ("test_blas_one_thread_numba_every_core_by_default",),
    "test_time_limit.py": ("test_a_limited_solve_gives_the_same_result_as_an_unlimited_one",),
    "test_time_limit_forecast.py": ("test_a_stretch_forecast_past_the_limit_is_refused_and_the_result_says_so",),
    "test_warm_up.py": ("test_the_warmed_simulator_builds_scenes_without_compiling",),
    "test_xp_first_order.py": ("test_numpy_path_equals_compiled",),
}

#: test modules with no test in the fast subset, and why
FAST_EXEMPT = {
    "test_fuzz_files.py": "the generated fuzz suite of the readers: hundreds of child processes by construction",
    "test_fuzz_options.py": "the generated fuzz suite of the options: hundreds of command lines by construction",
}


def pytest_collection_modifyitems(config, items):
    """Mark the tests of FAST with ``fast``."""
    for item in items:
        if getattr(item, "originalname", item.name) in FAST.get(item.path.name, ()):
            item.add_marker(pytest.mark.fast)


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def pytest_sessionstart(session):
    if SHARED_DATA is None and under_ci():
        pytest.exit(f"CI=true but {missing_reason()}: the reference-data tests cannot run, so the run fails",
                    returncode=1)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The reference-data folder; the test is skipped (with the reason) when it is absent."""
    if SHARED_DATA is None:
        pytest.skip(missing_reason())
    return SHARED_DATA


@pytest.fixture(scope="session")
def samples(tmp_path_factory) -> dict[str, Path]:
    """Small problem files in every format, written by the workbench (factories.write_samples)."""
    from factories import write_samples
    return write_samples(tmp_path_factory.mktemp("samples"))


@pytest.fixture(scope="session")
def report(tmp_path_factory) -> tuple[Path, Path]:
    """test_report's small study, run and reported once for the session (test_report, test_report_top):
    (results dir, report dir)."""
    from test_report import run_and_report
    return run_and_report(tmp_path_factory.mktemp("report"))
